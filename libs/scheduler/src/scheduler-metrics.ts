import { counter, createRegistry, gauge, gaugeReadAtScrape, histogram } from '@sched/metrics';

/** Every metric the scheduler exports, in one place. */
export function createSchedulerMetrics(ownerId: string) {
  const registry = createRegistry({ component: 'scheduler', owner: ownerId });
  let wheelSizes: () => Iterable<readonly [partition: number, size: number]> = () => [];
  return {
    registry,
    consumerRestarts: gaugeReadAtScrape(
      registry,
      'sched_consumer_restarts',
      'times the command consumer was started again after an error its Kafka client does not retry (read at scrape)',
    ),
    /** Where `sched_wheel_size` is read at each scrape: the owned partitions and their index sizes. */
    setWheelSizeSource(source: () => Iterable<readonly [partition: number, size: number]>): void {
      wheelSizes = source;
    },
    schedulingLag: histogram(
      registry,
      'sched_scheduling_lag_seconds',
      'due_at → claim (database time), seconds',
    ),
    outboxPublicationLag: histogram(
      registry,
      'sched_outbox_publication_lag_seconds',
      'outbox insert (claim) → dispatch record produced to its topic (record timestamp), seconds',
    ),
    overdue: gauge(
      registry,
      'sched_overdue_jobs',
      'SCHEDULED jobs due more than the grace ago, per partition',
      ['partition'],
    ),
    overdueByTenant: gauge(
      registry,
      'sched_overdue_jobs_by_tenant',
      'SCHEDULED jobs due more than the grace ago in the partitions this process owns, per tenant (counted every tenantBacklogEveryMs while there is a backlog)',
      ['tenant'],
    ),
    overdueOldestAge: gauge(
      registry,
      'sched_overdue_oldest_age_seconds',
      'how long ago the oldest SCHEDULED job due more than the grace ago was due, per partition (0: none)',
      ['partition'],
    ),
    queueOverdue: gauge(
      registry,
      'sched_queue_overdue_jobs',
      'due backlog per queue: SCHEDULED jobs due more than the grace ago, in the partitions this process owns (counted every queueBacklogEveryMs)',
      ['queue'],
    ),
    queueOldestOverdue: gauge(
      registry,
      'sched_queue_oldest_overdue_seconds',
      'per queue, how long ago the oldest overdue SCHEDULED job was due (0: none; counted every queueBacklogEveryMs)',
      ['queue'],
    ),
    queueDispatched: gauge(
      registry,
      'sched_queue_dispatched_jobs',
      'queue depth: jobs claimed and sent to the dispatch topic that no worker has started yet, per queue (counted every queueBacklogEveryMs)',
      ['queue'],
    ),
    queueOldestDispatched: gauge(
      registry,
      'sched_queue_oldest_dispatched_seconds',
      'per queue, how long ago the oldest claimed but not started job was claimed (0: none; counted every queueBacklogEveryMs)',
      ['queue'],
    ),
    queueRunning: gauge(
      registry,
      'sched_queue_running_jobs',
      'jobs started by a worker and not finished, per queue (counted every queueBacklogEveryMs)',
      ['queue'],
    ),
    commandsApplied: counter(registry, 'sched_commands_applied_total', 'commands applied', ['type']),
    commandsDuplicate: counter(
      registry,
      'sched_commands_duplicate_total',
      'commands skipped as already applied',
      ['type'],
    ),
    commandsRejected: counter(registry, 'sched_commands_rejected_total', 'commands rejected', ['reason']),
    commandsNoop: counter(
      registry,
      'sched_commands_noop_total',
      'commands that changed nothing (unknown or finished job)',
      ['type'],
    ),
    claimBatch: histogram(
      registry,
      'sched_claim_batch_size',
      'jobs claimed per claim transaction',
      [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000],
    ),
    claimed: counter(registry, 'sched_jobs_claimed_total', 'jobs claimed and written to the outbox', [
      'source',
    ]),
    claimMisses: counter(
      registry,
      'sched_claim_misses_total',
      'index entries a firing round asked for and did not claim: not_yet_due in database time (put back), handoff (fired by the old owner while this one took the partition over), or gone (cancelled, moved, claimed by another path or locked by one)',
      ['reason'],
    ),
    wheelSize: gauge(
      registry,
      'sched_wheel_size',
      'entries in the due-time index, per owned partition, with those moved out as due for a fair round and not claimed yet (read at scrape)',
      ['partition'],
      (g) => {
        g.reset();
        for (const [partition, size] of wheelSizes()) g.set({ partition: String(partition) }, size);
      },
    ),
    partitionEpoch: gauge(
      registry,
      'sched_partition_epoch',
      'epoch held by this process, per owned partition',
      ['partition'],
    ),
    partitionOwnedSince: gauge(
      registry,
      'sched_partition_owned_since_timestamp_seconds',
      'when this process took each partition it owns (unix seconds): time() minus it says for how long',
      ['partition'],
    ),
    partitionClaimed: counter(
      registry,
      'sched_partition_jobs_claimed_total',
      'jobs claimed per partition (every path): a partition far above the others is a hot shard',
      ['partition'],
    ),
    partitionsOwned: gauge(registry, 'sched_partitions_owned', 'partitions owned by this process'),
    regionStandby: gauge(
      registry,
      'sched_region_standby',
      ' 1 while this process stands by because another region is home (SCHED_REGION, sched region promote)',
    ),
    rebalances: counter(registry, 'sched_rebalances_total', 'assignment changes seen'),
    takeoverHold: histogram(
      registry,
      'sched_takeover_hold_seconds',
      'per partition taken over: how long firing was held until the commands already on the command topic at takeover were applied (outcome caught_up, or limit when SCHED_TAKEOVER_MAX_HOLD_MS ended it), seconds',
      [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      ['outcome'],
    ),
    commandApplyLag: histogram(
      registry,
      'sched_command_apply_lag_seconds',
      'command record timestamp (set by its producer) → its batch committed to Postgres, per command record; the window in which a live owner may fire a job a command in flight was meant to change, seconds',
      [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    ),
    queueUnstarted: gauge(
      registry,
      'sched_queue_unstarted_jobs',
      'per queue, jobs of the partitions this process owns dispatched and not started by any worker yet (admission control, every SCHED_ADMISSION_EVERY_MS)',
      ['queue'],
    ),
    queueAdmissionPaused: gauge(
      registry,
      'sched_queue_admission_paused',
      '1 while a queue is not claimed because too many of its jobs are dispatched and not started (SCHED_QUEUE_MAX_UNSTARTED), else 0',
      ['queue'],
    ),
    executionTimeoutsReaped: counter(
      registry,
      'sched_execution_timeouts_reaped_total',
      'running jobs the reaper took back past their execution timeout plus grace, whatever their heartbeats (attempt TIMED_OUT)',
    ),
    jobsExpired: counter(
      registry,
      'sched_jobs_expired_total',
      'jobs marked EXPIRED: their expiresAtMs passed before any claim dispatched them',
      ['queue'],
    ),
    dlqIngress: counter(
      registry,
      'sched_dlq_ingress_total',
      'jobs dead-lettered by the scheduler (the lease reaper: LEASE_LOST past the attempt budget, NEVER_STARTED past the unstarted-dispatch budget); the worker counts its own',
      ['queue', 'class'],
    ),
    rejectionPublishFailures: counter(
      registry,
      'sched_rejection_publish_failures_total',
      'attempts to produce a batch of rejected commands to the rejected topic that failed and were retried (the partition waits meanwhile), by error',
      ['error'],
    ),
    rejectionsTruncated: counter(
      registry,
      'sched_rejections_truncated_total',
      'rejections too large to carry the original record whole: they carry its first bytes and its source partition and offset',
    ),
    producerRecoveries: counter(
      registry,
      'sched_producer_recoveries_total',
      'produce requests the producer sent again: split (refused as too large, sent in halves) or reset (an idempotent-producer sequence error, sent from a new producer), by Kafka error',
      ['kind', 'error'],
    ),
    takeoverHoldLimit: counter(
      registry,
      'sched_takeover_hold_limit_total',
      'takeover holds ended by SCHED_TAKEOVER_MAX_HOLD_MS with commands still unapplied (the partition fired without them)',
    ),
    fencedWrites: counter(
      registry,
      'sched_fenced_writes_total',
      'writes refused because the epoch moved on',
      ['statement'],
    ),
    leaseReaped: counter(registry, 'sched_lease_reaped_total', 'expired leases returned by the reaper', [
      'to',
    ]),
    workerGoneReaped: counter(
      registry,
      'sched_worker_gone_jobs_reaped_total',
      "running jobs taken back before their lease ran out because their worker's process is gone (liveness)",
    ),
    workersGone: gauge(
      registry,
      'sched_workers_gone',
      'worker processes gone (stopped beating, or replaced under their id) within SCHED_WORKER_GONE_WINDOW_MS',
    ),
    occurrences: counter(
      registry,
      'sched_schedule_occurrences_total',
      'schedule occurrences recorded in the ledger, by fate',
      ['fate'],
    ),
    catchUpClaimed: counter(
      registry,
      'sched_catch_up_claimed_total',
      'overdue jobs claimed by the rate-limited catch-up drain',
    ),
    catchUpReadSeconds: histogram(
      registry,
      'sched_catch_up_read_seconds',
      'time of one catch-up read of the drain order (a sort of the overdue backlog)',
      [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ),
    dlqOldestAge: gauge(
      registry,
      'sched_dlq_oldest_age_seconds',
      'age of the oldest dead letter not yet replayed',
    ),
    dlqSize: gauge(registry, 'sched_dlq_size', 'dead letters not yet replayed'),
    slotLagBytes: gauge(
      registry,
      'sched_outbox_slot_lag_bytes',
      "WAL bytes the outbox's replication slot holds that its consumer has not confirmed (read every slotCheckEveryMs)",
    ),
    slotActive: gauge(
      registry,
      'sched_outbox_slot_active',
      "1 while a consumer (Debezium) holds the outbox's replication slot, 0 when none does or the slot is missing",
    ),
    commandTopicPartitions: gauge(
      registry,
      'sched_command_topic_partitions',
      'partitions of the command topic (the count the jobs were placed with): compare with the sum of sched_partitions_owned',
    ),
    outboxPruned: counter(registry, 'sched_outbox_pruned_total', 'outbox rows pruned'),
    finishedJobsPruned: counter(
      registry,
      'sched_finished_jobs_pruned_total',
      'finished jobs (with their attempts) deleted after the retention',
    ),
    claimRound: histogram(
      registry,
      'sched_claim_round_seconds',
      'one firing round: pool connection, claim, outbox insert and commit, seconds',
    ),
    slowRounds: counter(
      registry,
      'sched_slow_claim_rounds_total',
      'firing rounds whose oldest job was claimed more than slowRoundMs after its due time (each logged)',
    ),
  };
}

export type SchedulerMetrics = ReturnType<typeof createSchedulerMetrics>;
