import { DEFAULT_VALIDATION_LIMITS } from '@sched/command-rules';
import { DEFAULT_RETRY_POLICY } from '@sched/retry-policy';
import {
  buildConfig,
  requireNonEmpty,
  requireNonNegativeInt,
  requirePositiveInt,
  type EnvSpec,
} from '@sched/config';

export interface SchedulerOptions {
  /** Unique per process; recorded as partition owner. */
  ownerId: string;
  groupId: string;
  /**
   * This scheduler's region. When a home region is set in Postgres (`sched region promote`), only
   * its schedulers own partitions; the others stand by. '' (default): no region.
   */
  region: string;
  commandsTopic: string;
  rejectedTopic: string;
  /** Jobs due within this window are held in the wheel; later ones stay in Postgres until the horizon reaches them. */
  horizonMs: number;
  horizonExtendEveryMs: number;
  /** Max jobs per claim transaction (bounded batches). */
  claimBatchSize: number;
  /** Firing rounds (claim transactions covering every partition with due entries) in flight at once. */
  claimConcurrency: number;
  /** How long a DISPATCHED job may wait for a worker to start it before the reaper returns it. */
  dispatchLeaseMs: number;
  reconcileEveryMs: number;
  /** The reconciler leaves jobs due less than this long ago to the wheel. */
  reconcileGraceMs: number;
  /**
   * How often the overdue backlog is also counted per tenant (`sched_overdue_jobs_by_tenant`);
   * 0: never. Only while there is a backlog: the count reads each overdue row, so not every round.
   */
  tenantBacklogEveryMs: number;
  /**
   * How often the backlog is counted per queue at both ends of the dispatch (overdue and not
   * claimed; claimed and not started; running; with the oldest ages: `sched_queue_*`); 0: never.
   * It reads a row per overdue or in-flight job, so not every round.
   */
  queueBacklogEveryMs: number;
  /**
   * Due entries per partition moved out of the wheel ahead of the claim, so that a firing round
   * can choose among them by priority class and tenant (see FairReady); 0: no lookahead, rounds
   * take entries in due order only.
   */
  fairLookahead: number;
  /**
   * Shares of a firing round per priority class `[high, normal, low]` when more is due than the
   * round takes (stride scheduling, as the worker's admission): every class progresses under a
   * sustained high-priority backlog. Integers from 1 to 1000.
   */
  firePriorityWeights: readonly [number, number, number];
  reapEveryMs: number;
  /** Clock-skew margin added to lease expiry before reaping. */
  reapSkewMarginMs: number;
  /**
   * How long after a worker process is gone (its liveness row stopped beating, or a new process
   * took over its id) the reaper still looks for its RUNNING jobs to take back without waiting
   * for their leases; 0 turns the liveness path off (only expired leases are reaped).
   */
  workerGoneWindowMs: number;
  maxPayloadBytes: number;
  maxDueAheadMs: number;
  minDueAtMs: number;
  maxJitterWindowMs: number;
  outboxRetentionMs: number;
  commandDedupRetentionMs: number;
  /**
   * Jobs that ended (succeeded, cancelled, expired) are deleted with their attempts this long after
   * they ended; 0 keeps them forever. DEAD jobs stay until their dead letter is dealt with.
   */
  finishedJobRetentionMs: number;
  pruneEveryMs: number;
  /**
   * Kafka group session timeout: how long a silent owner (kill -9, a lost host) keeps its
   * partitions. Default 3,000 ms (was 6,000 until 2026-12-01); the broker's
   * `group.min.session.timeout.ms` must allow it (Kafka's default is 6,000; the stack and
   * docker-compose set 1,000), else the broker's minimum is used with a warning. A batch
   * applied for longer than the session keeps the membership (kafkajs heartbeats meanwhile).
   */
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  /** Broker long-poll bound for the command consumer (see the worker's fetchMaxWaitMs). */
  fetchMaxWaitMs: number;
  /**
   * Command-topic offsets are committed (after the database commit, as always) at most this often,
   * all partitions in one request; 0 commits after every batch. Re-delivered commands are applied
   * idempotently by commandId.
   */
  commitIntervalMs: number;
  /** Max partitions applied concurrently. */
  applyConcurrency: number;
  /** Longest the clock driver sleeps between checks. */
  maxSleepMs: number;
  /**
   * Firing rounds start at least this far apart (0: as soon as an entry is due). Bounds the extra
   * lateness it can add; in exchange a round carries every job that fell due in the gap.
   */
  minRoundGapMs: number;
  /** Emit lifecycle events (sched.events) for cancels, reschedules and dead letters. */
  lifecycleEvents: boolean;
  /** A schedule occurrence later than this is a misfire (handled by the schedule's misfire policy). */
  misfireThresholdMs: number;
  /** Period of the schedule sweep (buffered occurrences, anything the wheel missed). */
  generateEveryMs: number;
  /**
   * Overdue jobs (due before now − reconcileGraceMs, e.g. after an outage) are claimed at most this
   * many per second per process, highest priority first; on-time jobs are not limited by it.
   */
  catchUpRatePerSec: number;
  /** Run the dispatch observer (outbox publication lag metric). */
  observeDispatch: boolean;
  /** The observer samples about one record batch of each dispatch partition this often. */
  observeDispatchEveryMs: number;
  /**
   * A job that is already due when its CreateJob is applied is dispatched in the same transaction
   * (inserted DISPATCHED, its outbox row beside it) instead of waiting for a firing round: one row
   * write instead of two for "run now" jobs. Never early: due is judged in database time.
   */
  dispatchOnCreate: boolean;
  /**
   * A firing round whose oldest job is claimed later than this after its due time is logged with
   * where the time went; an event-loop stall longer than this is logged too.
   */
  slowRoundMs: number;
  /**
   * The longest a partition taken over waits to fire until the commands already on the command
   * topic at takeover are applied (ms; 0: no limit). Past it the partition fires with the rest of
   * that backlog unapplied, with a warning: a cancel or reschedule among them may lose to its job.
   */
  takeoverMaxHoldMs: number;
  /**
   * The attempt budget of a job without its own maxAttempts when the lease reaper takes back a
   * started attempt (the worker's default, 5): past it the job goes DEAD (LEASE_LOST).
   */
  defaultMaxAttempts: number;
  /** Lapses of dispatches no worker started before the job goes DEAD (NEVER_STARTED). */
  maxUnstartedDispatches: number;
  /**
   * Admission control: a queue with this many jobs dispatched and not started (fleet-wide, each
   * process its share by partitions) is not claimed until it is down to half; 0: off.
   */
  queueMaxUnstarted: number;
  /** How often the admission control counts the queues (ms). */
  admissionEveryMs: number;
  /** The replication slot the outbox is relayed through (its lag and activity are exported). */
  outboxSlot: string;
  /** How often the slot is read (ms); 0: never. */
  slotCheckEveryMs: number;
  /** Test hook: SIGKILL between generating a schedule occurrence and committing (never in production). */
  testCrashAfterGenerate: boolean;
}

export const schedulerDefaults: SchedulerOptions = {
  ownerId: 'scheduler',
  groupId: 'sched-scheduler',
  region: '',
  commandsTopic: 'sched.commands',
  rejectedTopic: 'sched.commands.rejected',
  horizonMs: 10 * 60_000,
  horizonExtendEveryMs: 60_000,
  claimBatchSize: 2_000,
  claimConcurrency: 2,
  dispatchLeaseMs: 5 * 60_000,
  reconcileEveryMs: 2_000,
  reconcileGraceMs: 2_000,
  tenantBacklogEveryMs: 30_000,
  queueBacklogEveryMs: 10_000,
  fairLookahead: 10_000,
  firePriorityWeights: [7, 2, 1],
  reapEveryMs: 1_000,
  reapSkewMarginMs: 2_000,
  workerGoneWindowMs: 3_600_000,
  ...DEFAULT_VALIDATION_LIMITS,
  outboxRetentionMs: 10 * 60_000,
  commandDedupRetentionMs: 7 * 24 * 3600_000,
  finishedJobRetentionMs: 7 * 24 * 3600_000,
  pruneEveryMs: 30_000,
  sessionTimeoutMs: 3_000,
  takeoverMaxHoldMs: 120_000,
  defaultMaxAttempts: DEFAULT_RETRY_POLICY.default.maxAttempts,
  maxUnstartedDispatches: 20,
  queueMaxUnstarted: 50_000,
  admissionEveryMs: 1_000,
  outboxSlot: 'sched_outbox',
  slotCheckEveryMs: 10_000,
  heartbeatIntervalMs: 1_000,
  fetchMaxWaitMs: 20,
  commitIntervalMs: 200,
  applyConcurrency: 4,
  maxSleepMs: 250,
  minRoundGapMs: 5,
  lifecycleEvents: true,
  misfireThresholdMs: 60_000,
  generateEveryMs: 1_000,
  catchUpRatePerSec: 5_000,
  testCrashAfterGenerate: false,
  observeDispatch: true,
  observeDispatchEveryMs: 1_000,
  dispatchOnCreate: true,
  slowRoundMs: 200,
};

export type SchedulerConfig = Readonly<SchedulerOptions>;

export function schedulerConfig(options: Partial<SchedulerOptions>): SchedulerConfig {
  return buildConfig('scheduler', schedulerDefaults, options, (c, problem) => {
    requireNonEmpty(problem, 'ownerId', c.ownerId);
    requireNonEmpty(problem, 'commandsTopic', c.commandsTopic);
    for (const k of [
      'horizonMs',
      'horizonExtendEveryMs',
      'claimBatchSize',
      'claimConcurrency',
      'dispatchLeaseMs',
      'reconcileEveryMs',
      'reapEveryMs',
      'maxPayloadBytes',
      'sessionTimeoutMs',
      'heartbeatIntervalMs',
      'applyConcurrency',
      'maxSleepMs',
      'misfireThresholdMs',
      'generateEveryMs',
      'catchUpRatePerSec',
      'slowRoundMs',
      'pruneEveryMs',
      'observeDispatchEveryMs',
    ] as const) {
      requirePositiveInt(problem, k, c[k]);
    }
    requireNonNegativeInt(problem, 'commitIntervalMs', c.commitIntervalMs);
    requireNonNegativeInt(problem, 'takeoverMaxHoldMs', c.takeoverMaxHoldMs);
    requirePositiveInt(problem, 'defaultMaxAttempts (SCHED_DEFAULT_MAX_ATTEMPTS)', c.defaultMaxAttempts);
    requirePositiveInt(
      problem,
      'maxUnstartedDispatches (SCHED_MAX_UNSTARTED_DISPATCHES)',
      c.maxUnstartedDispatches,
    );
    requireNonNegativeInt(problem, 'queueMaxUnstarted (SCHED_QUEUE_MAX_UNSTARTED)', c.queueMaxUnstarted);
    requirePositiveInt(problem, 'admissionEveryMs (SCHED_ADMISSION_EVERY_MS)', c.admissionEveryMs);
    requireNonNegativeInt(problem, 'slotCheckEveryMs (SCHED_SLOT_CHECK_EVERY_MS)', c.slotCheckEveryMs);
    requireNonNegativeInt(problem, 'workerGoneWindowMs', c.workerGoneWindowMs);
    requireNonNegativeInt(problem, 'minRoundGapMs', c.minRoundGapMs);
    requireNonNegativeInt(problem, 'tenantBacklogEveryMs', c.tenantBacklogEveryMs);
    requireNonNegativeInt(problem, 'queueBacklogEveryMs', c.queueBacklogEveryMs);
    requireNonNegativeInt(problem, 'fairLookahead', c.fairLookahead);
    if (c.fairLookahead > 0 && c.fairLookahead < c.claimBatchSize)
      problem(
        `fairLookahead ${c.fairLookahead} is below claimBatchSize ${c.claimBatchSize}: it would cap every round at that; use 0 (due order only) or ≥ claimBatchSize`,
      );
    if (c.fairLookahead > 1_000_000)
      problem(
        'fairLookahead above 1000000 holds that many due entries per partition in memory; use ≤ 1000000',
      );
    const w = c.firePriorityWeights;
    if (!Array.isArray(w) || w.length !== 3 || w.some((x) => !Number.isSafeInteger(x) || x < 1 || x > 1000))
      problem(
        `firePriorityWeights must be three integers from 1 to 1000 [high, normal, low] (got ${String(w)})`,
      );
    if (c.minRoundGapMs > 100) problem('minRoundGapMs above 100 ms delays every job that much; use ≤ 100');
    requireNonNegativeInt(problem, 'finishedJobRetentionMs', c.finishedJobRetentionMs);
    if (c.horizonExtendEveryMs >= c.horizonMs)
      problem('horizonExtendEveryMs must be smaller than horizonMs, or jobs slip past the wheel');
    if (c.heartbeatIntervalMs * 3 > c.sessionTimeoutMs)
      problem('heartbeatIntervalMs should be at most a third of sessionTimeoutMs');
    if (c.claimBatchSize > 10_000)
      problem('claimBatchSize above 10000 makes claim transactions long; use ≤ 10000');
  });
}

/** Environment variables the scheduler's main.ts reads. */
export const schedulerEnv: EnvSpec<SchedulerOptions> = {
  ownerId: { env: 'SCHED_OWNER_ID', kind: 'string' },
  groupId: { env: 'SCHED_GROUP_ID', kind: 'string' },
  region: { env: 'SCHED_REGION', kind: 'string' },
  commandsTopic: { env: 'SCHED_COMMANDS_TOPIC', kind: 'string' },
  rejectedTopic: { env: 'SCHED_REJECTED_TOPIC', kind: 'string' },
  horizonMs: { env: 'SCHED_HORIZON_MS', kind: 'int' },
  claimBatchSize: { env: 'SCHED_CLAIM_BATCH_SIZE', kind: 'int' },
  claimConcurrency: { env: 'SCHED_CLAIM_CONCURRENCY', kind: 'int' },
  dispatchLeaseMs: { env: 'SCHED_DISPATCH_LEASE_MS', kind: 'int' },
  reconcileEveryMs: { env: 'SCHED_RECONCILE_EVERY_MS', kind: 'int' },
  reapEveryMs: { env: 'SCHED_REAP_EVERY_MS', kind: 'int' },
  reapSkewMarginMs: { env: 'SCHED_REAP_SKEW_MARGIN_MS', kind: 'int' },
  workerGoneWindowMs: { env: 'SCHED_WORKER_GONE_WINDOW_MS', kind: 'int' },
  reconcileGraceMs: { env: 'SCHED_RECONCILE_GRACE_MS', kind: 'int' },
  tenantBacklogEveryMs: { env: 'SCHED_TENANT_BACKLOG_EVERY_MS', kind: 'int' },
  queueBacklogEveryMs: { env: 'SCHED_QUEUE_BACKLOG_EVERY_MS', kind: 'int' },
  fairLookahead: { env: 'SCHED_FAIR_LOOKAHEAD', kind: 'int' },
  firePriorityWeights: { env: 'SCHED_FIRE_PRIORITY_WEIGHTS', kind: 'ints' },
  maxPayloadBytes: { env: 'SCHED_MAX_PAYLOAD_BYTES', kind: 'int' },
  sessionTimeoutMs: { env: 'SCHED_SESSION_TIMEOUT_MS', kind: 'int' },
  takeoverMaxHoldMs: { env: 'SCHED_TAKEOVER_MAX_HOLD_MS', kind: 'int' },
  defaultMaxAttempts: { env: 'SCHED_DEFAULT_MAX_ATTEMPTS', kind: 'int' },
  maxUnstartedDispatches: { env: 'SCHED_MAX_UNSTARTED_DISPATCHES', kind: 'int' },
  queueMaxUnstarted: { env: 'SCHED_QUEUE_MAX_UNSTARTED', kind: 'int' },
  admissionEveryMs: { env: 'SCHED_ADMISSION_EVERY_MS', kind: 'int' },
  outboxSlot: { env: 'SCHED_OUTBOX_SLOT', kind: 'string' },
  slotCheckEveryMs: { env: 'SCHED_SLOT_CHECK_EVERY_MS', kind: 'int' },
  heartbeatIntervalMs: { env: 'SCHED_HEARTBEAT_INTERVAL_MS', kind: 'int' },
  commitIntervalMs: { env: 'SCHED_COMMIT_INTERVAL_MS', kind: 'int' },
  lifecycleEvents: { env: 'SCHED_LIFECYCLE_EVENTS', kind: 'bool' },
  misfireThresholdMs: { env: 'SCHED_MISFIRE_THRESHOLD_MS', kind: 'int' },
  generateEveryMs: { env: 'SCHED_GENERATE_EVERY_MS', kind: 'int' },
  catchUpRatePerSec: { env: 'SCHED_CATCH_UP_RATE_PER_SEC', kind: 'int' },
  testCrashAfterGenerate: { env: 'SCHED_TEST_CRASH_AFTER_GENERATE', kind: 'bool' },
  observeDispatch: { env: 'SCHED_OBSERVE_DISPATCH', kind: 'bool' },
  observeDispatchEveryMs: { env: 'SCHED_OBSERVE_DISPATCH_EVERY_MS', kind: 'int' },
  dispatchOnCreate: { env: 'SCHED_DISPATCH_ON_CREATE', kind: 'bool' },
  slowRoundMs: { env: 'SCHED_SLOW_ROUND_MS', kind: 'int' },
  minRoundGapMs: { env: 'SCHED_MIN_ROUND_GAP_MS', kind: 'int' },
  finishedJobRetentionMs: { env: 'SCHED_FINISHED_JOB_RETENTION_MS', kind: 'int' },
  pruneEveryMs: { env: 'SCHED_PRUNE_EVERY_MS', kind: 'int' },
};
