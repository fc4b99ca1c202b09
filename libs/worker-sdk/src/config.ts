import { buildConfig, requireNonEmpty, requireNonNegativeInt, requirePositiveInt } from '@sched/config';

export interface WorkerOptions {
  /** Unique per process: the lease owner. */
  workerId: string;
  groupId: string;
  /** Dispatch topics are `<prefix><queue>`. */
  dispatchTopicPrefix: string;
  /** Where AttemptResult commands go (the scheduler's command topic). */
  commandsTopic: string;
  /** Lease length; renewed every `heartbeatEveryMs`, so it bounds a crash's reclaim delay, not the job length. */
  leaseTtlMs: number;
  heartbeatEveryMs: number;
  /** Default ceiling on one execution, distinct from the lease (a job may override). */
  executionTimeoutMs: number;
  /**
   * Executions in flight in this process, across partitions and queues. A fetched batch is done
   * once its starts are durable, so long jobs hold slots, not partitions. A slot is taken before
   * the lease start is written, so this also bounds how many starts share a statement: with short
   * handlers throughput is about concurrency / start latency, and the start latency grows when
   * Postgres is busy. Default 1,024 (was 256, which lost up to half its start rate when the
   * dispatch backlog outran it); lower it for handlers that must not run that many at once.
   */
  concurrency: number;
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
  workerId: 'worker',
  groupId: 'sched-worker',
  dispatchTopicPrefix: 'sched.dispatch.',
  commandsTopic: 'sched.commands',
  leaseTtlMs: 30_000,
  heartbeatEveryMs: 10_000,
  executionTimeoutMs: 15 * 60_000,
  concurrency: 1024,
  dbBatchMax: 500,
  completionLingerMs: 25,
  dedupeCapacity: 100_000,
  poisonAfterReplays: 3,
  fetchMaxWaitMs: 10,
  commitIntervalMs: 200,
  sessionTimeoutMs: 3_000,
  lifecycleEvents: 'failures',
};

export type WorkerConfig = Readonly<WorkerOptions>;

export function workerConfig(options: Partial<WorkerOptions>): WorkerConfig {
  return buildConfig('worker', workerDefaults, options, (c, problem) => {
    requireNonEmpty(problem, 'workerId', c.workerId);
    for (const k of [
      'leaseTtlMs',
      'heartbeatEveryMs',
      'executionTimeoutMs',
      'concurrency',
      'dbBatchMax',
      'dedupeCapacity',
      'poisonAfterReplays',
      'sessionTimeoutMs',
    ] as const) {
      requirePositiveInt(problem, k, c[k]);
    }
    requireNonNegativeInt(problem, 'commitIntervalMs', c.commitIntervalMs);
    requireNonNegativeInt(problem, 'completionLingerMs', c.completionLingerMs);
    if (c.completionLingerMs * 2 > c.heartbeatEveryMs)
      problem('completionLingerMs must be at most half of heartbeatEveryMs');
    if (!['all', 'failures', 'none'].includes(c.lifecycleEvents))
      problem('lifecycleEvents must be all, failures or none');
    if (c.heartbeatEveryMs * 2 > c.leaseTtlMs)
      problem('heartbeatEveryMs must be at most half of leaseTtlMs so one late beat does not lose the lease');
  });
}
