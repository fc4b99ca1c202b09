import { describe, expect, it } from 'vitest';
import { CDC_HEARTBEAT_TABLE } from '@sched/store';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CONNECTOR_NAME, CONNECTOR_PLACEHOLDERS, connectorConfig, connectorTemplate } from './connector.js';
import { RECORD_ROUTER_CLASS } from './connect-smt.js';

describe('the outbox connector file', () => {
  const t = connectorTemplate();

  it('uses every placeholder, and fills only those (EventRouter keeps ${routedByValue})', () => {
    const text = JSON.stringify(t);
    for (const p of CONNECTOR_PLACEHOLDERS) expect(text).toContain(`\${${p}}`);
    const c = connectorConfig('postgres://sched:s%24cret@127.0.0.1:55432/sched');
    expect(c['database.hostname']).toBe('127.0.0.1');
    expect(c['database.port']).toBe('55432');
    expect(c['database.dbname']).toBe('sched');
    expect(c['database.user']).toBe('sched');
    expect(c['database.password']).toBe('s$cret');
    expect(c['transforms.outbox.route.topic.replacement']).toBe('sched.${routedByValue}');
    expect(JSON.stringify(c)).not.toMatch(/\$\{SCHED_/);
    expect(c.name).toBe(CONNECTOR_NAME);
  });

  it('reads the migrations-made publication, inserts only from now on, in any schema', () => {
    expect(t['plugin.name']).toBe('pgoutput');
    expect(t['publication.name']).toBe('sched_outbox');
    expect(t['publication.autocreate.mode']).toBe('disabled');
    expect(t['slot.name']).toBe('sched_outbox');
    expect(t['snapshot.mode']).toBe('no_data');
    // Debezium matches each comma-separated pattern of table.include.list against the whole
    // `schema.table`.
    const patterns = t['table.include.list']!.split(',').map((p) => new RegExp(`^(?:${p})$`));
    const include = { test: (name: string) => patterns.some((p) => p.test(name)) };
    for (const yes of ['public.outbox', 't_abc123.outbox', 'sched_cdc.heartbeat'])
      expect(include.test(yes)).toBe(true);
    for (const no of ['public.outbox_old', 'public.jobs', 'public.xoutbox', 'public.heartbeat'])
      expect(include.test(no)).toBe(false);
  });

  it('beats into the heartbeat table, and drops its changes before the outbox router sees them', () => {
    // The slot's confirmed position moves only with a captured change: without the beat it stays
    // behind while other databases of the cluster write (integration test in stack-health).
    // The table the migrations create (and publish) is the one the beat rewrites.
    const beat = t['heartbeat.action.query']!;
    expect(beat).toContain(`(DELETE FROM ${CDC_HEARTBEAT_TABLE})`);
    expect(beat).toContain(`INSERT INTO ${CDC_HEARTBEAT_TABLE} `);
    expect(t.transforms?.split(',')).toEqual(['heartbeat', 'outbox', 'record']);
    expect(t['transforms.heartbeat.type']).toBe('org.apache.kafka.connect.transforms.Filter');
    const pred = t['transforms.heartbeat.predicate']!;
    expect(t[`predicates.${pred}.type`]).toBe(
      'org.apache.kafka.connect.transforms.predicates.TopicNameMatches',
    );
    const dropped = new RegExp(`^(?:${t[`predicates.${pred}.pattern`]})$`);
    expect(dropped.test('sched.sched_cdc.heartbeat')).toBe(true);
    for (const kept of ['sched.public.outbox', 'sched.t_abc.outbox', '__debezium-heartbeat.sched'])
      expect(dropped.test(kept)).toBe(false);
  });

  it("hands the store's outbox records (logical decoding messages of its prefix) to our router, and only table rows to Debezium's", () => {
    // The store emits them (migration 014; 015 the Dispatch records) under the prefix the router reads.
    const prefix = t['transforms.record.prefix']!;
    for (const file of ['014_outbox_as_logical_messages.sql', '015_dispatch_record_in_router.sql']) {
      const migration = readFileSync(
        fileURLToPath(new URL(`../../../libs/store/migrations/${file}`, import.meta.url)),
        'utf8',
      );
      expect(migration).toContain(`pg_logical_emit_message(true, '${prefix}',`);
    }
    const included = new RegExp(`^(?:${t['message.prefix.include.list']})$`);
    expect(included.test(prefix)).toBe(true);
    for (const no of ['sched.record.v2', 'other', 'sched-record-v1']) expect(included.test(no)).toBe(false);
    expect(t['transforms.record.type']).toBe(RECORD_ROUTER_CLASS);
    // Debezium puts every message on `<topic.prefix>.message`: the router sees those, the outbox
    // router everything else.
    const pred = t['transforms.record.predicate']!;
    expect(t['transforms.outbox.predicate']).toBe(pred);
    expect(t['transforms.outbox.negate']).toBe('true');
    expect(t['transforms.record.negate']).toBeUndefined();
    const messages = new RegExp(`^(?:${t[`predicates.${pred}.pattern`]})$`);
    expect(messages.test(`${t['topic.prefix']}.message`)).toBe(true);
    for (const no of [
      'sched.public.outbox',
      'sched.t_abc.outbox',
      'sched.messages',
      '__debezium-heartbeat.sched',
    ])
      expect(messages.test(no)).toBe(false);
  });

  it('passes key and payload through as bytes, with the outbox columns as headers', () => {
    expect(t['key.converter']).toBe('org.apache.kafka.connect.storage.StringConverter');
    expect(t['value.converter']).toBe('io.debezium.converters.BinaryDataConverter');
    expect(t['transforms.outbox.route.by.field']).toBe('aggregatetype');
    expect(t['transforms.outbox.table.field.event.key']).toBe('aggregateid');
    expect(t['transforms.outbox.table.fields.additional.placement']?.split(',')).toEqual([
      'type:header:eventType',
      'job_id:header:jobId',
      'version:header:version',
      'attempt:header:attempt',
      'epoch:header:epoch',
      'tenant_id:header:tenantId',
    ]);
  });

  it('never compresses (kafkajs reads gzip only) and lingers 1 ms', () => {
    expect(t['producer.override.compression.type']).toBe('none');
    expect(t['producer.override.linger.ms']).toBe('1');
    expect(Number(t['heartbeat.interval.ms'])).toBeGreaterThan(0);
  });

  it('batches for bursts: big producer batches, big Debezium polls, no per-record context headers', () => {
    // With Kafka's 16 KB default producer batch and 2,048-row polls, Connect relayed a 100k burst
    // at ~6k rows/s and was the bottleneck (README of deploy/local).
    expect(Number(t['producer.override.batch.size'])).toBeGreaterThanOrEqual(262_144);
    expect(Number(t['max.batch.size'])).toBeGreaterThanOrEqual(8_192);
    expect(Number(t['max.queue.size'])).toBeGreaterThan(Number(t['max.batch.size']));
    expect(t['extended.headers.enabled']).toBe('false');
  });
});
