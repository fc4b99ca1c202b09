import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stackEndpoints } from './index.js';
import { REPO_ROOT, parseDatabaseUrl, stackSettings, withDatabase } from './settings.js';

describe('stackSettings', () => {
  it('defaults: .stack at the repo root, ~/.cache/sched-stack, the agreed ports', () => {
    const s = stackSettings({ HOME: '/home/u' });
    expect(s.stateDir).toBe(join(REPO_ROOT, '.stack'));
    expect(s.cacheDir).toBe('/home/u/.cache/sched-stack');
    expect([
      s.pgPort,
      s.kafkaPort,
      s.kafkaControllerPort,
      s.connectPort,
      s.registryPort,
      s.registryMgmtPort,
    ]).toEqual([55432, 9092, 9093, 8083, 8081, 9001]);
    expect(s.externalDatabaseUrl).toBeUndefined();
    expect(s.registryStorage).toBe('sql');
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('reads every port, the state dir and the cache home from the environment', () => {
    const s = stackSettings({
      HOME: '/h',
      XDG_CACHE_HOME: '/c',
      SCHED_STACK_DIR: '/tmp/st',
      SCHED_PG_PORT: '1',
      SCHED_KAFKA_PORT: '2',
      SCHED_KAFKA_CONTROLLER_PORT: '3',
      SCHED_CONNECT_PORT: '4',
      SCHED_REGISTRY_PORT: '5',
      SCHED_REGISTRY_MGMT_PORT: '6',
    });
    expect(s.stateDir).toBe('/tmp/st');
    expect(s.cacheDir).toBe('/c/sched-stack');
    expect([
      s.pgPort,
      s.kafkaPort,
      s.kafkaControllerPort,
      s.connectPort,
      s.registryPort,
      s.registryMgmtPort,
    ]).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('names the variable to fix, and lists every problem at once', () => {
    expect(() => stackSettings({ SCHED_KAFKA_PORT: 'x' })).toThrow(/SCHED_KAFKA_PORT="x" is not an integer/);
    try {
      stackSettings({
        SCHED_CONNECT_PORT: '9092',
        SCHED_REGISTRY_PORT: '70000',
        SCHED_REGISTRY_STORAGE: 'disk',
      });
      expect.unreachable();
    } catch (err) {
      expect((err as { code: string }).code).toBe('SCHED_E_CONFIG');
      const msg = (err as Error).message;
      expect(msg).toMatch(/SCHED_CONNECT_PORT and SCHED_KAFKA_PORT are both 9092/);
      expect(msg).toMatch(/SCHED_REGISTRY_PORT=70000 is not a TCP port/);
      expect(msg).toMatch(/SCHED_REGISTRY_STORAGE="disk" must be sql or mem/);
    }
  });

  it('rejects a DATABASE_URL that is not postgres://', () => {
    expect(() => stackSettings({ DATABASE_URL: 'mysql://x@y/z' })).toThrow(
      /DATABASE_URL must be a postgres:\/\/ URL/,
    );
  });
});

describe('stackEndpoints', () => {
  it('points at the stack on 127.0.0.1, registry at the ccompat/v7 base', () => {
    expect(stackEndpoints({ SCHED_STACK_DIR: '/s' })).toEqual({
      databaseUrl: 'postgres://sched:sched@127.0.0.1:55432/sched',
      kafkaBrokers: ['127.0.0.1:9092'],
      registryUrl: 'http://127.0.0.1:8081/apis/ccompat/v7',
      connectUrl: 'http://127.0.0.1:8083',
      stateDir: '/s',
    });
  });

  it('lets DATABASE_URL override the database, and follows port variables', () => {
    const e = stackEndpoints({
      DATABASE_URL: 'postgres://a:b@db:6543/x',
      SCHED_KAFKA_PORT: '19092',
      SCHED_REGISTRY_PORT: '18081',
    });
    expect(e.databaseUrl).toBe('postgres://a:b@db:6543/x');
    expect(e.kafkaBrokers).toEqual(['127.0.0.1:19092']);
    expect(e.registryUrl).toBe('http://127.0.0.1:18081/apis/ccompat/v7');
  });
});

describe('database URLs', () => {
  it('parses with libpq defaults and swaps the database', () => {
    expect(parseDatabaseUrl('postgres://u:p%40ss@h/d')).toEqual({
      host: 'h',
      port: 5432,
      database: 'd',
      user: 'u',
      password: 'p@ss',
    });
    expect(withDatabase('postgres://u:p@h:1/d?sslmode=disable', 'registry')).toBe(
      'postgres://u:p@h:1/registry?sslmode=disable',
    );
  });
});
