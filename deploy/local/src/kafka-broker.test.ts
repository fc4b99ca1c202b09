import { describe, expect, it } from 'vitest';
import { brokerProperties, newClusterId, renderProperties } from './kafka-broker.js';
import { postgresConf } from './postgres.js';
import { stackSettings } from './settings.js';

describe('broker configuration', () => {
  it('makes KRaft cluster ids of 16 bytes, base64url', () => {
    const id = newClusterId();
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(Buffer.from(id, 'base64url')).toHaveLength(16);
  });

  it("never makes an id starting with '-' (the format command would read it as an option)", () => {
    // 1 in 64 random ids starts with '-': 5,000 draws miss that with probability ~1e-34.
    const bad = Array.from({ length: 5_000 }, newClusterId).filter((id) => id.startsWith('-'));
    expect(bad).toEqual([]);
  });

  it('listens on 127.0.0.1 only, on the configured ports, one node, RF 1', () => {
    const p = brokerProperties(
      stackSettings({
        SCHED_STACK_DIR: '/s',
        SCHED_KAFKA_PORT: '19092',
        SCHED_KAFKA_CONTROLLER_PORT: '19093',
      }),
    );
    expect(p.listeners).toBe('PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093');
    expect(p['advertised.listeners']).toBe('PLAINTEXT://127.0.0.1:19092');
    expect(p['controller.quorum.voters']).toBe('1@127.0.0.1:19093');
    expect(p['log.dirs']).toBe('/s/kafka/data');
    expect(p['offsets.topic.replication.factor']).toBe('1');
    expect(renderProperties(p)).toMatch(/^auto\.create\.topics\.enable=true$/m);
  });
});

describe('postgres configuration', () => {
  it('is logical, local, on its own port, durable', () => {
    const c = postgresConf(55432);
    for (const line of [
      'port = 55432',
      "listen_addresses = '127.0.0.1'",
      'wal_level = logical',
      'synchronous_commit = on',
      'fsync = on',
    ]) {
      expect(c).toContain(line);
    }
  });
});
