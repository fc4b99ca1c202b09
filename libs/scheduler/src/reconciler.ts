import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { type BacklogCount, queueBacklog, tenantBacklog } from './backlog-counts.js';
import { CatchUpDrain, partitionsToDrain } from './catch-up.js';
import type { Claimer } from './claimer.js';
import type { SchedulerConfig } from './config.js';
import type { FireTags } from './fair-ready.js';
import { countOverdue, setOverdueGauges } from './overdue-gauges.js';
import type { PartitionRuntime } from './partition-runtime.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';

export interface ReconcilerDeps {
  pool: pg.Pool;
  config: SchedulerConfig;
  metrics: SchedulerMetrics;
  log: Logger;
  claimer: Claimer;
  fireTags: FireTags;
  /** The owned partitions' runtimes, as the scheduler holds them now. */
  runtimes(): PartitionRuntime[];
  /** The owned partition's runtime, if this process still owns it. */
  runtime(partition: number): PartitionRuntime | undefined;
  /** Gives up a partition whose epoch moved on. */
  release(rt: PartitionRuntime): void;
  /** Whether an assignment is still being claimed and loaded. */
  assigning(): boolean;
  /** Marks EXPIRED the overdue jobs of these partitions whose expiry passed; returns how many. */
  expire(rts: PartitionRuntime[]): Promise<number>;
  stopping(): boolean;
}

/**
 * The scheduler's reconcile round: the catch-up drain of what the wheel did not claim (see
 * `CatchUpDrain`), then the backlog gauges (`sched_overdue_jobs*`, dead letters, and now and then
 * the per-tenant and per-queue counts).
 */
export class Reconciler {
  private readonly drain: CatchUpDrain;
  /** `sched_overdue_jobs_by_tenant` and the `sched_queue_*` gauges: counted now and then. */
  private readonly backlogCounts: { tenants: BacklogCount; queues: BacklogCount };

  constructor(private readonly d: ReconcilerDeps) {
    this.drain = new CatchUpDrain({
      config: d.config,
      claimer: d.claimer,
      metrics: d.metrics,
      fireTags: d.fireTags,
      runtime: d.runtime,
      release: d.release,
      stopping: d.stopping,
    });
    this.backlogCounts = {
      tenants: tenantBacklog({
        pool: d.pool,
        gauge: d.metrics.overdueByTenant,
        log: d.log,
        everyMs: d.config.tenantBacklogEveryMs,
        graceMs: d.config.reconcileGraceMs,
      }),
      queues: queueBacklog({
        pool: d.pool,
        gauges: {
          overdue: d.metrics.queueOverdue,
          oldestOverdue: d.metrics.queueOldestOverdue,
          dispatched: d.metrics.queueDispatched,
          oldestDispatched: d.metrics.queueOldestDispatched,
          running: d.metrics.queueRunning,
        },
        log: d.log,
        everyMs: d.config.queueBacklogEveryMs,
        graceMs: d.config.reconcileGraceMs,
      }),
    };
  }

  /**
   * Claims due jobs the index missed, and drains an overdue backlog: across the owned partitions
   * whose wheel is not itself behind, highest priority first and tenants in turn within a
   * priority, in bounded batches, at most catchUpRatePerSec. Returns how many.
   */
  async once(): Promise<number> {
    const rts = this.d.runtimes().filter((r) => !r.closed);
    if (rts.length === 0) {
      this.forgetBacklogCounts();
      return 0;
    }
    // A partition whose wheel is itself behind by more than the grace (a burst it is still firing)
    // is left out of this round: its overdue rows are almost all in the wheel, which claims them
    // for less than half of what the catch-up's priority-ordered scan costs per row (a 100k burst
    // sent 23 % of its jobs through the catch-up at 153 µs a row against 63). Once the wheel has
    // caught up, anything it missed is still found here: nothing waits longer than the wheel does.
    const graceMs = this.d.config.reconcileGraceMs;
    // A partition under its takeover hold is not drained: its commands come first.
    const drain = partitionsToDrain(
      rts.filter((r) => !r.held),
      Date.now(),
      graceMs,
      this.d.assigning(),
    );
    let total = 0;
    // The gauges' count runs beside the pass (it is a full count of the backlog): they show what
    // the pass started from, at most a period old.
    const counting = countOverdue(
      this.d.pool,
      rts.map((r) => r.partition),
      graceMs,
    );
    counting.catch(() => undefined); // awaited below; not unhandled if the pass throws first
    try {
      // Jobs whose expiry passed before they were dispatched (no claim takes them) first.
      await this.d.expire(rts.filter((r) => !r.held));
      total = await this.drain.pass(drain);
      const counts = await counting;
      // Only partitions still owned: a gauge of one released or revoked (lingering: its new owner
      // reports it) during the pass or the count stays removed.
      const partitions = rts
        .filter((r) => this.d.runtime(r.partition) === r && r.owning)
        .map((r) => r.partition);
      const anyOverdue = setOverdueGauges(this.d.metrics, counts, partitions);
      this.backlogCounts.tenants.count(partitions, !anyOverdue);
      this.backlogCounts.queues.count(partitions);
    } catch (err) {
      this.d.log.error({ err }, 'reconcile failed');
    }
    return total;
  }

  /** The per-tenant and per-queue counts covered a partition given up: count again next round. */
  forgetBacklogCounts(): void {
    this.backlogCounts.tenants.forget();
    this.backlogCounts.queues.forget();
  }
}
