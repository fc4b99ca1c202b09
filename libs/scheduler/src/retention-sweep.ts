import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { pruneFinishedJobs, pruneOlderThan } from '@sched/store';
import type { SchedulerConfig } from './config.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/** How long the row of a worker process that is gone is kept (operators see it in GET /v1/workers). */
export const GONE_WORKER_RETENTION_MS = 7 * 24 * 3600_000;
/** Finished jobs deleted per statement by the retention prune. */
export const PRUNE_BATCH = 5_000;
/** Longest a run spends on finished jobs: a backlog of them goes over a few runs. */
const FINISHED_BUDGET_MS = 5_000;

/**
 * One retention run: outbox rows past `outboxRetentionMs`, command ids past
 * `commandDedupRetentionMs`, rows of worker processes gone for 7 days, and finished jobs (with their attempts) past
 * `finishedJobRetentionMs` (0: kept), the last in batches of `PRUNE_BATCH`, each its own short
 * transaction, for at most 5 s a run, so that the loop is never held long. A failure is logged and
 * the next run tries again: nothing here is needed for correctness.
 */
export async function retentionSweep(d: {
  pool: pg.Pool;
  config: SchedulerConfig;
  metrics: SchedulerMetrics;
  log: Logger;
  stopping: () => boolean;
}): Promise<void> {
  try {
    const n = await pruneOlderThan(d.pool, 'outbox', d.config.outboxRetentionMs);
    d.metrics.outboxPruned.inc(n);
    await pruneOlderThan(d.pool, 'command_applied', d.config.commandDedupRetentionMs);
    await pruneOlderThan(d.pool, 'command_issued', d.config.commandDedupRetentionMs);
    await pruneOlderThan(d.pool, 'worker_liveness', GONE_WORKER_RETENTION_MS);
    const retentionMs = d.config.finishedJobRetentionMs;
    if (retentionMs === 0) return;
    const until = Date.now() + FINISHED_BUDGET_MS;
    for (;;) {
      const pruned = await pruneFinishedJobs(d.pool, retentionMs, PRUNE_BATCH);
      d.metrics.finishedJobsPruned.inc(pruned);
      if (pruned < PRUNE_BATCH || Date.now() >= until || d.stopping()) return;
    }
  } catch (err) {
    d.log.warn({ err }, 'prune failed');
  }
}
