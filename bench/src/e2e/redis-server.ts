import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { trackStarted } from './child-process.js';

/**
 * The bench's own redis-server for BullMQ: bound to 127.0.0.1 on its own port with a temporary
 * directory, so the machine's Redis is never touched. Durability class: AOF with fsync every
 * second (`appendfsync everysec`), RDB snapshots off. `hz` raised from the default 10 to 100,
 * the highest value Redis' own redis.conf suggests, because blocked-client timeouts (BullMQ's
 * BZPOPMIN wake-ups for delayed jobs) are served on that clock. `maxmemory-policy noeviction` is
 * what BullMQ requires.
 */
export const REDIS_KNOBS = {
  appendonly: 'yes',
  appendfsync: 'everysec',
  save: '',
  hz: '100',
  'maxmemory-policy': 'noeviction',
} as const;

export interface OwnRedis {
  port: number;
  pid: number;
  dir: string;
  client: Redis;
  version: string;
  usedMemory(): Promise<number>;
  flushAll(): Promise<void>;
  stop(): Promise<void>;
}

export async function startOwnRedis(port: number): Promise<OwnRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'e2e-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--protected-mode',
    'yes',
    '--dir',
    dir,
    '--daemonize',
    'no',
    ...Object.entries(REDIS_KNOBS).flatMap(([k, v]) => [`--${k}`, v]),
  ];
  const child: ChildProcess = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  trackStarted(child);
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-8192)));
  child.stderr!.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-8192)));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 3 });
  // Refused connections while the server starts are expected; the loop below retries.
  client.on('error', () => undefined);
  const t0 = Date.now();
  for (;;) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch {
      if (child.exitCode !== null || Date.now() - t0 > 10_000) {
        client.disconnect();
        throw new Error(`redis-server on ${port} did not start:\n${out}`);
      }
      client.disconnect();
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const info = async (section: string, key: string) => {
    const text = await client.info(section);
    return new RegExp(`^${key}:(.*)$`, 'm').exec(text)?.[1]?.trim() ?? '';
  };
  const version = await info('server', 'redis_version');
  return {
    port,
    pid: child.pid!,
    dir,
    client,
    version,
    usedMemory: async () => Number(await info('memory', 'used_memory')),
    flushAll: async () => {
      await client.flushall();
    },
    async stop() {
      client.disconnect();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
