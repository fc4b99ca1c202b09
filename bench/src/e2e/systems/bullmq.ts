import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { startChild, e2ePath, type Child } from '../child-process.js';
import { startOwnRedis, REDIS_KNOBS, type OwnRedis } from '../redis-server.js';
import type { StartHub, StartLog } from '../start-log.js';
import { packageVersion } from './host-info.js';
import {
  CREATE_BATCH,
  CREATE_BATCHES_IN_FLIGHT,
  inBatches,
  type RecoveryTarget,
  type SystemFactory,
  type SystemSession,
} from './system.js';

/**
 * BullMQ on the bench's own redis-server (AOF everysec). Delayed jobs are added with the due time
 * as `timestamp + delay` (BullMQ's own job fields), so the intended time is exact. Knobs: worker
 * concurrency, auto-removal of completed jobs (BullMQ's production advice), Redis `hz` 100.
 */
export const BULLMQ_KNOBS = {
  'worker concurrency': 100,
  workerProcesses: 1,
  removeOnComplete: 'true (count 0)',
  'redis appendonly / appendfsync': `${REDIS_KNOBS.appendonly} / ${REDIS_KNOBS.appendfsync}`,
  'redis hz': Number(REDIS_KNOBS.hz),
  'redis port': 16379,
} as const;

export function bullmqFactory(hub: StartHub): SystemFactory {
  const runId = randomBytes(3).toString('hex');
  let sessions = 0;
  let redis: OwnRedis | null = null;
  const up = async () => (redis ??= await startOwnRedis(BULLMQ_KNOBS['redis port']));
  return {
    system: 'bullmq',
    recoveryTargets: ['worker'],
    async describe() {
      const r = await up();
      return {
        versions: { bullmq: packageVersion('bullmq'), ioredis: packageVersion('ioredis'), redis: r.version },
        knobs: { ...BULLMQ_KNOBS },
      };
    },
    async open() {
      const r = await up();
      await r.flushAll();
      const name = `e2e-${runId}-${++sessions}`;
      const queue = new Queue(name, {
        connection: { host: '127.0.0.1', port: r.port, maxRetriesPerRequest: null },
      });
      await queue.waitUntilReady();
      const worker = await startWorker(hub, name, r.port, 0);
      return new BullmqSession(hub, r, queue, name, worker);
    },
    async shutdown() {
      await redis?.stop();
      redis = null;
    },
  };
}

function startWorker(hub: StartHub, queue: string, port: number, n: number): Promise<Child> {
  return startChild({
    name: `bullmq worker ${n}`,
    entry: e2ePath('./workers/bullmq-worker.ts'),
    marker: 'BULLMQ_WORKER_READY',
    onStarts: hub.onStarts,
    env: {
      E2E_QUEUE: queue,
      E2E_REDIS_PORT: String(port),
      E2E_BULLMQ_CONCURRENCY: String(BULLMQ_KNOBS['worker concurrency']),
    },
  });
}

class BullmqSession implements SystemSession {
  readonly system = 'bullmq' as const;
  private restarts = 0;

  constructor(
    private readonly hub: StartHub,
    private readonly redis: OwnRedis,
    private readonly queue: Queue,
    private readonly name: string,
    private worker: Child,
  ) {}

  cpuGroups(): Record<string, number[]> {
    return { worker: [this.worker.pid], redis: [this.redis.pid] };
  }

  private opts(log: StartLog, i: number, now: number) {
    const due = log.due[i]!;
    return { timestamp: now, delay: Math.max(0, due - now) };
  }

  async createBatched(log: StartLog, from: number, to: number): Promise<void> {
    await inBatches(from, to, CREATE_BATCH, CREATE_BATCHES_IN_FLIGHT, async (lo, hi) => {
      const now = Date.now();
      const jobs = [];
      for (let i = lo; i < hi; i++)
        jobs.push({ name: 'j', data: { r: log.tag, i }, opts: this.opts(log, i, now) });
      await this.queue.addBulk(jobs);
    });
  }

  async createSingle(log: StartLog, from: number, to: number, concurrency: number): Promise<void> {
    await inBatches(from, to, 1, concurrency, async (i) => {
      await this.queue.add('j', { r: log.tag, i }, this.opts(log, i, Date.now()));
    });
  }

  async footprint() {
    const used = await this.redis.usedMemory();
    return { storeBytes: used, detail: { redisUsedMemory: used } };
  }

  async ranPerStore(log: StartLog, indexes: number[]): Promise<number> {
    if (indexes.length === 0) return 0;
    // Completed jobs are removed (removeOnComplete), so "started" is told from "never started": a
    // job still delayed or waiting never ran; any other (active, stalled, completed and gone) did.
    const notYet = new Set<number>();
    const pending = await this.queue.getJobs(['delayed', 'waiting', 'prioritized', 'wait']);
    for (const j of pending) {
      const d = j?.data as { r?: number; i?: number } | undefined;
      if (d?.r === log.tag && typeof d.i === 'number') notYet.add(d.i);
    }
    return indexes.filter((i) => !notYet.has(i)).length;
  }

  async kill9AndRestart(_target: RecoveryTarget) {
    const killedAtMs = Date.now();
    await this.worker.kill9();
    this.worker = await startWorker(this.hub, this.name, this.redis.port, ++this.restarts);
    return { killedAtMs, readyAtMs: Date.now() };
  }

  async close(): Promise<void> {
    await this.worker.stop();
    await this.queue.close();
  }
}
