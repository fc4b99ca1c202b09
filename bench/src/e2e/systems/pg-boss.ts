import { randomBytes } from 'node:crypto';
import PgBoss from 'pg-boss';
import pg from 'pg';
import { stackEndpoints, stackStatus } from '@sched/local-stack';
import { startChild, e2ePath, type Child } from '../child-process.js';
import type { StartHub, StartLog } from '../start-log.js';
import { packageVersion } from './host-info.js';
import {
  CREATE_BATCH,
  CREATE_BATCHES_IN_FLIGHT,
  DB_COUNTERS_SQL,
  inBatches,
  type DbCounters,
  type RecoveryTarget,
  type SystemFactory,
  type SystemSession,
} from './system.js';

/**
 * pg-boss on the stack's own Postgres server (same server settings as ours: synchronous_commit
 * on, fsync on), in a database of its own. Low-latency knobs: `pollingIntervalSeconds` at the
 * minimum pg-boss allows (0.5); fetch loops × batch size sized so one worker process can start
 * well above the delayed workload's 1,000 jobs/s.
 */
export const PGBOSS_DB = 'bench_pgboss';
export const PGBOSS_SCHEMA = 'pgboss_e2e';
export const PGBOSS_KNOBS = {
  pollingIntervalSeconds: 0.5,
  'work() loops per worker process': 8,
  batchSize: 250,
  workerProcesses: 1,
  'maintenance (supervise)': 'in the bench process, default interval',
  'postgres synchronous_commit': 'on',
} as const;

function pgBossUrl(): string {
  const u = new URL(stackEndpoints().databaseUrl);
  u.pathname = `/${PGBOSS_DB}`;
  return u.toString();
}

async function ensureDatabase(): Promise<void> {
  const c = new pg.Client({ connectionString: stackEndpoints().databaseUrl });
  await c.connect();
  try {
    const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [PGBOSS_DB]);
    if (rowCount === 0) await c.query(`CREATE DATABASE ${PGBOSS_DB}`);
  } finally {
    await c.end();
  }
}

export function pgBossFactory(hub: StartHub): SystemFactory {
  const runId = randomBytes(3).toString('hex');
  let sessions = 0;
  let boss: PgBoss | null = null;
  let pool: pg.Pool | null = null;
  const up = async () => {
    if (boss && pool) return { boss, pool };
    await ensureDatabase();
    boss = new PgBoss({ connectionString: pgBossUrl(), schema: PGBOSS_SCHEMA, max: 12, schedule: false });
    boss.on('error', (err: Error) => process.stderr.write(`[e2e] pg-boss error: ${err.message}\n`));
    await boss.start();
    pool = new pg.Pool({ connectionString: pgBossUrl(), max: 2 });
    return { boss, pool };
  };
  return {
    system: 'pg-boss',
    recoveryTargets: ['worker'],
    async describe() {
      return { versions: { 'pg-boss': packageVersion('pg-boss') }, knobs: { ...PGBOSS_KNOBS } };
    },
    async open() {
      const { boss: b, pool: p } = await up();
      const queue = `e2e_${runId}_${++sessions}`;
      await b.createQueue(queue);
      const s = await stackStatus();
      const pgPid = s.services.find((x) => x.name === 'postgres')?.pid;
      const worker = await startWorker(hub, queue, 0);
      return new PgBossSession(hub, b, p, queue, worker, pgPid ? { postgres: [pgPid] } : {});
    },
    async shutdown() {
      await boss?.stop({ graceful: false, wait: true }).catch(() => undefined);
      // A clean slate for the next run: pg-boss installs its schema again on start.
      await pool?.query(`DROP SCHEMA IF EXISTS ${PGBOSS_SCHEMA} CASCADE`).catch((err: Error) => {
        process.stderr.write(`[e2e] could not drop ${PGBOSS_SCHEMA}: ${err.message}\n`);
      });
      await pool?.end().catch(() => undefined);
      boss = null;
      pool = null;
    },
  };
}

function startWorker(hub: StartHub, queue: string, n: number): Promise<Child> {
  return startChild({
    name: `pg-boss worker ${n}`,
    entry: e2ePath('./workers/pg-boss-worker.ts'),
    marker: 'PGBOSS_WORKER_READY',
    onStarts: hub.onStarts,
    env: {
      E2E_QUEUE: queue,
      E2E_PGBOSS_URL: pgBossUrl(),
      E2E_PGBOSS_SCHEMA: PGBOSS_SCHEMA,
      E2E_PGBOSS_LOOPS: String(PGBOSS_KNOBS['work() loops per worker process']),
      E2E_PGBOSS_BATCH: String(PGBOSS_KNOBS.batchSize),
      E2E_PGBOSS_POLL_S: String(PGBOSS_KNOBS.pollingIntervalSeconds),
    },
  });
}

class PgBossSession implements SystemSession {
  readonly system = 'pg-boss' as const;
  private restarts = 0;

  constructor(
    private readonly hub: StartHub,
    private readonly boss: PgBoss,
    private readonly pool: pg.Pool,
    private readonly queue: string,
    private worker: Child,
    private readonly infra: Record<string, number[]>,
  ) {}

  cpuGroups(): Record<string, number[]> {
    return { worker: [this.worker.pid], ...this.infra };
  }

  private job(log: StartLog, i: number) {
    return {
      name: this.queue,
      data: { r: log.tag, i },
      startAfter: new Date(log.due[i]!).toISOString(),
    };
  }

  async createBatched(log: StartLog, from: number, to: number): Promise<void> {
    await inBatches(from, to, CREATE_BATCH, CREATE_BATCHES_IN_FLIGHT, async (lo, hi) => {
      const jobs = [];
      for (let i = lo; i < hi; i++) jobs.push(this.job(log, i));
      await this.boss.insert(jobs);
    });
  }

  async createSingle(log: StartLog, from: number, to: number, concurrency: number): Promise<void> {
    await inBatches(from, to, 1, concurrency, async (i) => {
      await this.boss.send(this.queue, { r: log.tag, i }, { startAfter: new Date(log.due[i]!) });
    });
  }

  async dbCounters(): Promise<DbCounters> {
    const { rows } = await this.pool.query<{ wal: number; commits: number }>(DB_COUNTERS_SQL);
    return { walBytes: rows[0]!.wal, commits: rows[0]!.commits };
  }

  async footprint() {
    const { rows } = await this.pool.query<{ total: string; heap: string }>(
      `SELECT pg_total_relation_size(format('%I.%I', $2::text, partition_name)) AS total,
              pg_relation_size(format('%I.%I', $2::text, partition_name)) AS heap
       FROM ${PGBOSS_SCHEMA}.queue WHERE name = $1`,
      [this.queue, PGBOSS_SCHEMA],
    );
    const total = Number(rows[0]?.total ?? NaN);
    return {
      storeBytes: total,
      detail: { jobPartitionTableAndIndexes: total, heap: Number(rows[0]?.heap ?? NaN) },
    };
  }

  async ranPerStore(log: StartLog, indexes: number[]): Promise<number> {
    if (indexes.length === 0) return 0;
    // A job a worker fetched is `active` (or past it); one never fetched is `created` or `retry`.
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${PGBOSS_SCHEMA}.job
       WHERE name = $1 AND (data->>'r')::bigint = $2 AND (data->>'i')::int = ANY($3::int[])
         AND state NOT IN ('created', 'retry')`,
      [this.queue, log.tag, indexes],
    );
    return rows[0]?.n ?? 0;
  }

  async kill9AndRestart(_target: RecoveryTarget) {
    const killedAtMs = Date.now();
    await this.worker.kill9();
    this.worker = await startWorker(this.hub, this.queue, ++this.restarts);
    return { killedAtMs, readyAtMs: Date.now() };
  }

  async close(): Promise<void> {
    await this.worker.stop();
    // pg-boss 10's deleteQueue refuses a queue with jobs left (a foreign key on its partition);
    // the schema is dropped when the factory shuts down, so a refusal here costs nothing.
    await this.boss.deleteQueue(this.queue).catch(() => undefined);
  }
}
