import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { Contracts } from '@sched/contracts';
import {
  kafkajsPort,
  type GroupConsumer,
  type KafkaAdminPort,
  type KafkaPort,
  type MessageProducer,
} from '@sched/kafka';
import { stackEndpoints, recipeVersions, DISPATCH_PARTITIONS } from '@sched/local-stack';
import { silentLogger } from '@sched/logging';
import { createPool, dropSchema, migrate } from '@sched/store';
import type { Child } from '../child-process.js';
import type { StartHub, StartLog } from '../start-log.js';
import { encodeJobRef } from '../workers/report-starts.js';
import { gitRevision, packageVersion, rssOf } from './host-info.js';
import {
  holdKnob,
  holdWorker,
  overrides,
  prefixed,
  stackProcessGroups,
  startScheduler,
  startWorker,
} from './ours-processes.js';
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

/** Command topic partitions (as the stack's `sched.commands`) and how long bench topics live. */
const COMMAND_PARTITIONS = 12;
const TOPIC_RETENTION_MS = String(2 * 3600_000);
/** Longest the bench's tap may take to read a session's dispatch topic after a workload. */
const TAP_READ_MS = 120_000;

/**
 * Knobs we set for the bench; everything else is the apps' defaults (README configuration table).
 * Worker concurrency is the default (1,024 executions in flight per process).
 */
export const OURS_KNOBS = {
  commandPartitions: COMMAND_PARTITIONS,
  dispatchPartitions: DISPATCH_PARTITIONS,
  schedulerProcesses: 1,
  workerProcesses: 1,
  'SCHED_CLAIM_BATCH_SIZE (default)': 2000,
  'SCHED_CLAIM_CONCURRENCY (default)': 2,
  'SCHED_WORKER_CONCURRENCY (default)': 1024,
  'SCHED_DISPATCH_ON_CREATE (default)': 'on',
  'SCHED_WORKER_DB_BATCH_MAX (default)': 500,
  'session timeouts (default)': '6 s',
  'debezium poll.interval.ms': 5,
  'debezium max.batch.size / producer batch.size': '8192 / 256 KB',
  'kafka producer acks': 'all (-1)',
  'postgres synchronous_commit': 'on',
} as const;

const jobIdOf = (tag: number, i: number) => `t${tag}-${i}`;
/** A session's dispatch topic and the consumer group of the bench's tap on it. */
const dispatchTopicOf = (queue: string) => `sched.dispatch.${queue}`;
const tapGroupOf = (schema: string) => `${schema}-tap`;
const JOB_ID = /^t(\d+)-(\d+)$/;

export function oursFactory(hub: StartHub): SystemFactory {
  const ep = stackEndpoints();
  const runId = randomBytes(3).toString('hex');
  let sessions = 0;
  let contracts: Contracts | null = null;
  const kafka: KafkaPort = kafkajsPort({
    clientId: `e2e-${runId}`,
    brokers: ep.kafkaBrokers,
    logger: silentLogger(),
  });

  return {
    system: 'ours',
    recoveryTargets: ['scheduler', 'worker'],
    async describe() {
      const pool = createPool({ databaseUrl: ep.databaseUrl, max: 1 });
      const pgVersion = (await pool.query<{ v: string }>('SHOW server_version')).rows[0]!.v;
      await pool.end();
      const v = recipeVersions();
      return {
        versions: {
          ours: gitRevision(),
          postgres: pgVersion,
          kafka: v.kafka,
          debezium: v.debezium,
          apicurio: v.apicurio,
          kafkajs: packageVersion('kafkajs'),
        },
        knobs: {
          ...OURS_KNOBS,
          ...prefixed('scheduler override ', overrides('E2E_OURS_SCHEDULER_ENV')),
          ...prefixed('worker override ', overrides('E2E_OURS_WORKER_ENV')),
          ...holdKnob(),
        },
      };
    },
    async open() {
      contracts ??= new Contracts({ registryUrl: ep.registryUrl });
      await contracts.registerAll();
      return OursSession.open(hub, kafka, contracts, `e2e_${runId}_${++sessions}`);
    },
    async shutdown() {},
  };
}

class OursSession implements SystemSession {
  readonly system = 'ours' as const;
  private restarts = 0;
  /** Lets a worker held by `E2E_OURS_HOLD_WORKER_MS` go on (before it is stopped or killed). */
  private releaseHold: () => void = () => undefined;
  private tapStarted = false;

  private constructor(
    private readonly hub: StartHub,
    private readonly contracts: Contracts,
    private readonly schema: string,
    private readonly queue: string,
    private readonly topic: string,
    private readonly pool: pg.Pool,
    private readonly producer: MessageProducer,
    private readonly tap: GroupConsumer,
    private readonly admin: KafkaAdminPort,
    private scheduler: Child,
    private worker: Child,
    private readonly infra: Record<string, number[]>,
  ) {}

  static async open(
    hub: StartHub,
    kafka: KafkaPort,
    contracts: Contracts,
    schema: string,
  ): Promise<OursSession> {
    const ep = stackEndpoints();
    await migrate(ep.databaseUrl, { schema });
    const pool = createPool({ databaseUrl: ep.databaseUrl, schema, max: 4, applicationName: 'e2e-bench' });
    const queue = schema.replace(/_/g, '-');
    await pool.query('INSERT INTO queue (queue) VALUES ($1) ON CONFLICT DO NOTHING', [queue]);
    const topic = `e2e.${schema}.commands`;
    const admin = await kafka.admin();
    {
      await admin.ensureTopics([
        { topic, partitions: COMMAND_PARTITIONS, config: { 'retention.ms': TOPIC_RETENTION_MS } },
        {
          topic: dispatchTopicOf(queue),
          partitions: DISPATCH_PARTITIONS,
          // The broker stamps each record when it appends it: the record timestamp is then the
          // moment the dispatch is on Kafka (the scheduler issue's figure), not Debezium's event time.
          config: { 'retention.ms': TOPIC_RETENTION_MS, 'message.timestamp.type': 'LogAppendTime' },
        },
      ]);
    }
    const producer = await kafka.producer();
    // The dispatch records' arrival on Kafka: their timestamps, set by the broker when it appends
    // them (LogAppendTime), read back by a consumer in the bench. Since the time is in the record,
    // the consumer reads after the workload, not during it (see `readTap`): live, it fetched and
    // decoded every dispatch record on the cores the system under test was using (a 100k burst's
    // 100,000 records within its first seconds), load that neither peer's harness puts on the
    // machine. At 1,000 dispatches/s an eager live consumer had cost the bench 6-7 % and the broker
    // 3-4 % of a core (measured); a lazy one still read each record during the run.
    const tap = kafka.groupConsumer(
      {
        groupId: tapGroupOf(schema),
        topics: [dispatchTopicOf(queue)],
        fromBeginning: true,
        maxWaitTimeMs: 100,
        // An observer: no commit round trip between batches, every partition handled at once.
        commitIntervalMs: 200,
        partitionsConsumedConcurrently: DISPATCH_PARTITIONS,
      },
      {
        onBatch: async (batch) => {
          const now = Date.now();
          for (const m of batch.messages) {
            const k = JOB_ID.exec(m.key?.toString() ?? '');
            if (k) hub.get(Number(k[1]))?.recordKafka(Number(k[2]), now, m.timestampMs);
          }
        },
      },
    );
    const infra = await stackProcessGroups();
    const scheduler = await startScheduler(hub, schema, topic, 0);
    const worker = await startWorker(hub, schema, topic, queue, 0);
    const session = new OursSession(
      hub,
      contracts,
      schema,
      queue,
      topic,
      pool,
      producer,
      tap,
      admin,
      scheduler,
      worker,
      infra,
    );
    session.releaseHold = holdWorker(worker);
    return session;
  }

  cpuGroups(): Record<string, number[]> {
    return { scheduler: [this.scheduler.pid], worker: [this.worker.pid], ...this.infra };
  }

  private encode(log: StartLog, i: number) {
    const jobId = jobIdOf(log.tag, i);
    return {
      key: jobId,
      value: this.contracts.encodeCommand({
        commandId: randomUUID(),
        tenantId: 'default',
        issuedAtMs: Date.now(),
        body: {
          kind: 'CreateJob',
          value: {
            jobId,
            queue: this.queue,
            dueAtMs: log.due[i]!,
            payload: Buffer.from(encodeJobRef(log.tag, i)),
          },
        },
      }),
    };
  }

  async createBatched(log: StartLog, from: number, to: number): Promise<void> {
    await inBatches(from, to, CREATE_BATCH, CREATE_BATCHES_IN_FLIGHT, async (lo, hi) => {
      const msgs = [];
      for (let i = lo; i < hi; i++) msgs.push(this.encode(log, i));
      await this.producer.send(this.topic, msgs);
    });
  }

  async createSingle(log: StartLog, from: number, to: number, concurrency: number): Promise<void> {
    await inBatches(from, to, 1, concurrency, async (i) => {
      await this.producer.send(this.topic, [this.encode(log, i)]);
    });
  }

  async uncommitted(): Promise<number> {
    // The scheduler commits a command batch's offset only after its Postgres commit.
    return this.admin.groupLag(`${this.schema}-sched`, this.topic);
  }

  async dbCounters(): Promise<DbCounters> {
    const { rows } = await this.pool.query<{ wal: number; commits: number }>(DB_COUNTERS_SQL);
    return { walBytes: rows[0]!.wal, commits: rows[0]!.commits };
  }

  async wheelEntries(): Promise<number> {
    return (await this.schedulerMetrics()).get('sched_wheel_size') ?? NaN;
  }

  async footprint() {
    const { rows } = await this.pool.query<{ job: string; cmd: string; outbox: string }>(
      `SELECT pg_total_relation_size('job') AS job, pg_total_relation_size('command_applied') AS cmd,
              pg_total_relation_size('outbox') AS outbox`,
    );
    const r = rows[0]!;
    const job = Number(r.job);
    const cmd = Number(r.cmd);
    const liveHeap = await this.schedulerLiveHeap();
    const m = await this.schedulerMetrics();
    return {
      storeBytes: job + cmd,
      detail: {
        jobTableAndIndexes: job,
        commandAppliedTableAndIndexes: cmd,
        outbox: Number(r.outbox),
        schedulerRss: rssOf(this.scheduler.pid),
        schedulerHeapUsed: liveHeap ?? m.get('nodejs_heap_size_used_bytes') ?? NaN,
        wheelEntries: m.get('sched_wheel_size') ?? NaN,
      },
    };
  }

  /** The scheduler's heap after a full collection (POST /debug/gc), or null if it could not say. */
  private async schedulerLiveHeap(): Promise<number | null> {
    try {
      const res = await fetch(`http://127.0.0.1:${Number(this.scheduler.ready.metricsPort)}/debug/gc`, {
        method: 'POST',
      });
      if (!res.ok) return null;
      const body = (await res.json()) as { heapUsedBytes?: unknown };
      return typeof body.heapUsedBytes === 'number' ? body.heapUsedBytes : null;
    } catch {
      return null;
    }
  }

  /** The scheduler's /metrics, each series summed over its label sets. */
  private async schedulerMetrics(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    try {
      const res = await fetch(`http://127.0.0.1:${Number(this.scheduler.ready.metricsPort)}/metrics`);
      for (const line of (await res.text()).split('\n')) {
        const m = /^([a-z_]+)(?:\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
        if (m) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[2]));
      }
    } catch {
      // metrics are evidence only
    }
    return out;
  }

  async kill9AndRestart(target: RecoveryTarget) {
    const killedAtMs = Date.now();
    const n = ++this.restarts;
    if (target === 'scheduler') {
      await this.scheduler.kill9();
      this.scheduler = await startScheduler(this.hub, this.schema, this.topic, n);
    } else {
      this.releaseHold();
      await this.worker.kill9();
      this.worker = await startWorker(this.hub, this.schema, this.topic, this.queue, n);
    }
    return { killedAtMs, readyAtMs: Date.now() };
  }

  async ranPerStore(log: StartLog, indexes: number[]): Promise<number> {
    if (indexes.length === 0) return 0;
    const { rows } = await this.pool.query<{ n: number }>(
      'SELECT count(DISTINCT job_id)::int AS n FROM attempt_history WHERE job_id = ANY($1::text[])',
      [indexes.map((i) => jobIdOf(log.tag, i))],
    );
    return rows[0]?.n ?? 0;
  }

  /**
   * Reads the session's dispatch topic up to its end (the tap starts the first time; the records
   * carry the broker's append time, so reading late changes no figure). Gives up after
   * TAP_READ_MS: jobs whose record it did not read show no on-Kafka time, as if never dispatched.
   */
  private async readTap(): Promise<void> {
    if (!this.tapStarted) {
      this.tapStarted = true;
      await this.tap.start();
    }
    const deadline = Date.now() + TAP_READ_MS;
    let lag = Infinity;
    while (Date.now() < deadline) {
      lag = await this.admin.groupLag(tapGroupOf(this.schema), dispatchTopicOf(this.queue));
      if (lag === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    console.error(`[e2e]   the bench's tap left ${lag} dispatch records unread after ${TAP_READ_MS} ms`);
  }

  async evidence(log: StartLog, include: (i: number) => boolean): Promise<Record<string, unknown>> {
    await this.readTap();
    const dueArr = log.due;
    const timesDir = process.env.E2E_TIMES_DIR;
    if (timesDir) log.writeCsv(timesDir);
    return {
      'due→claim (db time)': log.hop(dueArr, log.claim, include),
      // The scheduler issue's figure, due → dispatch record on Kafka: the record's timestamp, which
      // the broker sets when it appends it (the bench's dispatch topics use LogAppendTime).
      'due→on kafka (broker append time)': log.hop(dueArr, log.kafkaTs, include),
      'claim→on kafka (broker append time)': log.hop(log.claim, log.kafkaTs, include),
      'on kafka→worker handler start': log.hop(log.kafkaTs, log.first, include),
      'claim→worker handler start': log.hop(log.claim, log.first, include),
      // Every job whose dispatch record reached Kafka, started or not: shows whether claim + CDC
      // kept up while the worker did not.
      'due→on kafka (all dispatched jobs)': log.hop(dueArr, log.kafkaTs),
    };
  }

  async close(): Promise<void> {
    this.releaseHold();
    await Promise.allSettled([this.worker.stop(), this.scheduler.stop()]);
    await this.tap.stop().catch(() => undefined);
    await this.admin.disconnect().catch(() => undefined);
    await this.producer.disconnect().catch(() => undefined);
    await this.pool.end();
    // E2E_KEEP_SCHEMA=1 keeps the session's tables for a post-mortem (job states, attempts, outbox).
    if (process.env.E2E_KEEP_SCHEMA) console.log(`[e2e]   kept schema ${this.schema}`);
    else await dropSchema(stackEndpoints().databaseUrl, this.schema).catch(() => undefined);
  }
}
