import { hostname } from 'node:os';
import {
  buildConfig,
  ConfigError,
  requireNonEmpty,
  requireNonNegativeInt,
  requirePositiveInt,
} from '@sched/config';

export interface WorkerOptions {
  /**
   * Unique per process: the lease owner, and the key of the process's liveness row. Default
   * `<hostname>-<pid>`; two live processes must never share one (see `livenessTtlMs`).
   */
  workerId: string;
  groupId: string;
  /** Dispatch topics are `<prefix><queue>`. */
  dispatchTopicPrefix: string;
  /** Where AttemptResult commands go (the scheduler's command topic). */
  commandsTopic: string;
  /** Lease length; renewed every `heartbeatEveryMs`, so it bounds a crash's reclaim delay, not the job length. */
  leaseTtlMs: number;
  heartbeatEveryMs: number;
  /**
   * Process liveness (one row per worker process, migration 013): beaten every `livenessEveryMs`,
   * alive for `livenessTtlMs` after each beat. When the process dies (kill -9, a lost host, frozen
   * past it) or a new process takes its worker id over, the scheduler's reaper takes its running
   * jobs back after about `livenessTtlMs` instead of each job's `leaseTtlMs`. 0 turns it off.
   * Default 10,000 ms, beaten every 2,000 ms.
   */
  livenessTtlMs: number;
  livenessEveryMs: number;
  /** Default ceiling on one execution, distinct from the lease (a job may override). */
  executionTimeoutMs: number;
  /**
   * A handler still running this long after its execution timeout (it ignored `ctx.signal`) is
   * abandoned: its execution slot is given back, its eventual result is ignored (the scheduler has
   * taken the job back as TIMED_OUT), and it is counted in `sched_worker_handlers_abandoned_total`.
   * At most `concurrency` abandoned handlers at a time: past that, one keeps its slot until it
   * returns, so a worker never runs more than twice its concurrency. 0: never abandon.
   */
  abandonAfterTimeoutMs: number;
  /**
   * Executions in flight in this process, across partitions and queues. A fetched batch is done
   * once its starts are durable, so long jobs hold slots, not partitions. A slot is taken before
   * the lease start is written, so this also bounds how many starts share a statement: with short
   * handlers throughput is about concurrency / start latency, and the start latency grows when
   * Postgres is busy. Default 1,024 (was 256, which lost up to half its start rate when the
   * dispatch backlog outran it); lower it for handlers that must not run that many at once.
   */
  concurrency: number;
  /**
   * How executions waiting for a slot are chosen when more are fetched than `concurrency` (and a
   * queue's own `concurrency`) admit: by priority class with these weights, `[high, normal, low]`
   * for job priority > 0, = 0, < 0 (under contention the classes start jobs in proportion to their
   * weights, so the low class always progresses), then round robin over the tenants waiting in
   * the class, then in arrival order. Default [7, 2, 1].
   */
  priorityWeights: readonly [number, number, number];
  /** Most executions of one tenant in flight at once in this process (0: no cap). Default 0. */
  tenantConcurrency: number;
  /** Per-tenant caps that override `tenantConcurrency` (0: no cap for that tenant). */
  tenantConcurrencyLimits: Readonly<Record<string, number>>;
  /** Most lease starts (and, separately, successful completions) written in one database statement. */
  dbBatchMax: number;
  /**
   * A successful completion waits up to this long to share its statement (and commit) with others
   * (0: one event-loop turn). Nobody waits on it: the job is already done, only its row is not.
   */
  completionLingerMs: number;
  dedupeCapacity: number;
  /** A dead letter that failed the same way after this many replays is quarantined. */
  poisonAfterReplays: number;
  /**
   * Broker long-poll bound for the dispatch consumer. At 10 ms an idle worker's fetches cost the
   * broker ~0.05 core; 250 ms (with the scheduler's command consumer at 250 too) saved that but
   * measured p50 24-26 → 34-35 ms at 1,000 due/s (2026-11-30, one run each way, twice), so 10 stays.
   */
  fetchMaxWaitMs: number;
  /**
   * Most bytes of one dispatch partition a fetch brings back. kafkajs decodes a whole fetch at once
   * and the records live until their batch is handled, so this bounds the decoded backlog a burst
   * piles up in the process (and what the garbage collector copies while it waits).
   */
  fetchMaxBytesPerPartition: number;
  /**
   * Dispatch-topic offsets are committed at most this often, for all partitions in one request (0:
   * after every fetched batch). Re-delivery after a crash is absorbed by the eventId dedupe and the
   * version-checked lease start.
   */
  commitIntervalMs: number;
  /**
   * Kafka group session: how long a worker that died without leaving (kill -9, a lost host) holds
   * its dispatch partitions. Default 3,000 ms, which needs the broker's
   * `group.min.session.timeout.ms` at or below it (Kafka's default is 6,000; the stack and
   * docker-compose set 1,000); otherwise the worker uses the broker's minimum and logs a warning.
   */
  sessionTimeoutMs: number;
  /**
   * Lifecycle events written to sched.events with each completion (through the outbox):
   * `failures` (default) = RETRY_SCHEDULED and DEAD_LETTERED; `all` adds SUCCEEDED (one more outbox
   * row per job: costs throughput); `none`.
   */
  lifecycleEvents: 'all' | 'failures' | 'none';
}

export const workerDefaults: WorkerOptions = {
  workerId: `${hostname()}-${process.pid}`,
  groupId: 'sched-worker',
  dispatchTopicPrefix: 'sched.dispatch.',
  commandsTopic: 'sched.commands',
  leaseTtlMs: 30_000,
  heartbeatEveryMs: 10_000,
  livenessTtlMs: 10_000,
  livenessEveryMs: 2_000,
  executionTimeoutMs: 15 * 60_000,
  abandonAfterTimeoutMs: 10_000,
  concurrency: 1024,
  priorityWeights: [7, 2, 1],
  tenantConcurrency: 0,
  tenantConcurrencyLimits: {},
  dbBatchMax: 500,
  completionLingerMs: 25,
  dedupeCapacity: 100_000,
  poisonAfterReplays: 3,
  fetchMaxWaitMs: 10,
  fetchMaxBytesPerPartition: 256 * 1024,
  commitIntervalMs: 200,
  sessionTimeoutMs: 3_000,
  lifecycleEvents: 'failures',
};

export type WorkerConfig = Readonly<WorkerOptions>;

export function workerConfig(options: Partial<WorkerOptions>): WorkerConfig {
  return buildConfig('worker', workerDefaults, options, (c, problem) => {
    requireNonEmpty(problem, 'workerId', c.workerId);
    if (!Number.isSafeInteger(c.abandonAfterTimeoutMs) || c.abandonAfterTimeoutMs < 0)
      problem('abandonAfterTimeoutMs must be an integer >= 0 (0: never abandon)');
    for (const k of [
      'leaseTtlMs',
      'heartbeatEveryMs',
      'executionTimeoutMs',
      'concurrency',
      'dbBatchMax',
      'dedupeCapacity',
      'poisonAfterReplays',
      'sessionTimeoutMs',
      'fetchMaxBytesPerPartition',
    ] as const) {
      requirePositiveInt(problem, k, c[k]);
    }
    requireNonNegativeInt(problem, 'commitIntervalMs', c.commitIntervalMs);
    requireNonNegativeInt(problem, 'livenessTtlMs', c.livenessTtlMs);
    if (c.livenessTtlMs > 0) {
      requirePositiveInt(problem, 'livenessEveryMs', c.livenessEveryMs);
      if (c.livenessEveryMs * 2 > c.livenessTtlMs)
        problem(
          'livenessEveryMs must be at most half of livenessTtlMs so one late beat does not lose every job',
        );
    }
    requireNonNegativeInt(problem, 'tenantConcurrency', c.tenantConcurrency);
    if (
      !Array.isArray(c.priorityWeights) ||
      c.priorityWeights.length !== 3 ||
      c.priorityWeights.some((w) => !Number.isSafeInteger(w) || w < 1 || w > 1000)
    )
      problem(
        `priorityWeights must be three integers from 1 to 1000 [high, normal, low] (got ${String(c.priorityWeights)})`,
      );
    for (const [t, n] of Object.entries(c.tenantConcurrencyLimits))
      requireNonNegativeInt(problem, `tenantConcurrencyLimits.${t}`, n);
    requireNonNegativeInt(problem, 'completionLingerMs', c.completionLingerMs);
    if (c.completionLingerMs * 2 > c.heartbeatEveryMs)
      problem('completionLingerMs must be at most half of heartbeatEveryMs');
    if (!['all', 'failures', 'none'].includes(c.lifecycleEvents))
      problem('lifecycleEvents must be all, failures or none');
    if (c.heartbeatEveryMs * 2 > c.leaseTtlMs)
      problem('heartbeatEveryMs must be at most half of leaseTtlMs so one late beat does not lose the lease');
  });
}

/**
 * The fairness options from the environment: SCHED_WORKER_PRIORITY_WEIGHTS ("7,2,1"),
 * SCHED_WORKER_TENANT_CONCURRENCY (an integer), SCHED_WORKER_TENANT_LIMITS ("acme=50,beta=10").
 * A value that does not parse is a ConfigError naming the variable.
 */
export function fairnessFromEnv(
  env: Record<string, string | undefined>,
): Partial<Pick<WorkerOptions, 'priorityWeights' | 'tenantConcurrency' | 'tenantConcurrencyLimits'>> {
  const out: Partial<
    Pick<WorkerOptions, 'priorityWeights' | 'tenantConcurrency' | 'tenantConcurrencyLimits'>
  > = {};
  const problems: string[] = [];
  const int = (s: string) => (/^\d+$/.test(s.trim()) ? Number(s.trim()) : NaN);
  const weights = env.SCHED_WORKER_PRIORITY_WEIGHTS;
  if (weights) {
    const w = weights.split(',').map(int);
    if (w.length !== 3 || w.some((x) => !(x >= 1 && x <= 1000)))
      problems.push(
        `SCHED_WORKER_PRIORITY_WEIGHTS="${weights}" must be three integers from 1 to 1000: high,normal,low`,
      );
    else out.priorityWeights = [w[0]!, w[1]!, w[2]!];
  }
  const cap = env.SCHED_WORKER_TENANT_CONCURRENCY;
  if (cap) {
    const n = int(cap);
    if (Number.isNaN(n)) problems.push(`SCHED_WORKER_TENANT_CONCURRENCY="${cap}" is not an integer >= 0`);
    else out.tenantConcurrency = n;
  }
  const limits = env.SCHED_WORKER_TENANT_LIMITS;
  if (limits) {
    const parsed: Record<string, number> = {};
    for (const part of limits.split(',').filter((p) => p.trim() !== '')) {
      const eq = part.lastIndexOf('=');
      const tenant = eq > 0 ? part.slice(0, eq).trim() : '';
      const n = eq > 0 ? int(part.slice(eq + 1)) : NaN;
      if (!tenant || Number.isNaN(n))
        problems.push(`SCHED_WORKER_TENANT_LIMITS: "${part}" must be tenant=cap with cap an integer >= 0`);
      else parsed[tenant] = n;
    }
    out.tenantConcurrencyLimits = parsed;
  }
  if (problems.length > 0) throw new ConfigError('worker', problems);
  return out;
}
