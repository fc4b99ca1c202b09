import type { OverdueJob } from '@sched/store';
import type { Claimer, ClaimGroup } from './claimer.js';
import type { SchedulerConfig } from './config.js';
import type { FireTags } from './fair-ready.js';
import type { PartitionRuntime } from './partition-runtime.js';
import { RateWindow } from './rate-window.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/** How long a catch-up pass waits for its rate window to free grants before it looks again. */
const CATCH_UP_WAIT_MS = 100;

export interface CatchUpDeps {
  config: Pick<
    SchedulerConfig,
    'claimBatchSize' | 'catchUpRatePerSec' | 'reconcileEveryMs' | 'reconcileGraceMs'
  >;
  claimer: Pick<Claimer, 'overdue' | 'claimRound'>;
  metrics: SchedulerMetrics;
  fireTags: FireTags;
  /** The owned partition's runtime, if this process still owns it. */
  runtime(partition: number): PartitionRuntime | undefined;
  /** Gives up a partition whose epoch moved on. */
  release(partition: number): void;
  stopping(): boolean;
}

/**
 * The catch-up drain of an overdue backlog (after an outage, or jobs the wheel missed): highest
 * priority first, tenants in turn within a priority (`jobOverdueFair`), claimed by id with the
 * firing round's fenced SKIP LOCKED claim, at most `catchUpRatePerSec` per process (any 1.1 s
 * window).
 */
export class CatchUpDrain {
  private readonly rate: RateWindow;

  constructor(private readonly d: CatchUpDeps) {
    this.rate = new RateWindow(d.config.catchUpRatePerSec);
  }

  /**
   * One pass over the partitions given (see `partitionsToDrain`); returns how many it claimed.
   * One read (one sort of the backlog: ~0.3-0.5 s of Postgres for 100k overdue rows) serves every
   * claim the rate allows in a pass; between claims the pass waits for the rate window to move on
   * (it frees 50 ms slots) rather than for the next pass, so a backlog drains at the rate, not at
   * a fraction of it. What a pass read and did not claim is read again next pass.
   */
  async pass(drain: PartitionRuntime[]): Promise<number> {
    const { claimBatchSize, catchUpRatePerSec, reconcileEveryMs, reconcileGraceMs } = this.d.config;
    const budgetMs = reconcileEveryMs - CATCH_UP_WAIT_MS;
    const passEnds = Date.now() + budgetMs;
    const planSize = Math.max(claimBatchSize, Math.ceil((catchUpRatePerSec * reconcileEveryMs) / 1000));
    let total = 0;
    read: while (drain.length > 0) {
      if (this.rate.available() === 0) {
        // The previous pass spent the rate: wait for the window within this pass's time.
        if (this.d.stopping() || Date.now() >= passEnds) break;
        await wait();
        continue;
      }
      const plan = await this.d.claimer.overdue(drain, planSize, reconcileGraceMs);
      // A period of claiming from the plan, counted from when it was read: the sort of a large
      // backlog can itself take longer than a period, and the plan should not be thrown away
      // after one batch for another sort.
      const claimEnds = Date.now() + budgetMs;
      let claimedOfPlan = 0;
      for (let next = 0; next < plan.length;) {
        if (this.d.stopping()) break read;
        const allowed = this.rate.take(Math.min(claimBatchSize, plan.length - next));
        if (allowed === 0) {
          if (Date.now() >= claimEnds) break read;
          await wait();
          continue;
        }
        const got = await this.claim(plan.slice(next, next + allowed));
        next += allowed;
        this.rate.refund(allowed - got);
        claimedOfPlan += got;
        total += got;
        if (Date.now() >= claimEnds) break read;
      }
      // Read again only while whole plans are claimed and the pass has time: rows another
      // transaction holds, or a backlog smaller than a plan, end the pass (the next one looks again).
      if (plan.length < planSize || claimedOfPlan < plan.length || Date.now() >= passEnds) break;
    }
    return total;
  }

  /** Claims overdue jobs by id as one firing round does (fenced, SKIP LOCKED); returns how many. */
  private async claim(jobs: OverdueJob[]): Promise<number> {
    const byPartition = new Map<number, ClaimGroup>();
    for (const j of jobs) {
      const rt = this.d.runtime(j.partition);
      if (!rt || rt.closed) continue;
      let g = byPartition.get(j.partition);
      if (!g) byPartition.set(j.partition, (g = { rt, entries: [] }));
      g.entries.push({ jobId: j.jobId, dueMs: j.dueAtMs, tag: this.d.fireTags.tag(j.tenantId, j.priority) });
    }
    if (byPartition.size === 0) return 0;
    const { outcomes, fenced } = await this.d.claimer.claimRound([...byPartition.values()], 'reconcile');
    for (const rt of fenced) this.d.release(rt.partition);
    let got = 0;
    for (const [partition, out] of outcomes) {
      const rt = this.d.runtime(partition);
      for (const j of out.claimed) rt?.forget(j.jobId);
      got += out.claimed.length;
    }
    this.d.metrics.catchUpClaimed.inc(got);
    return got;
  }
}

function wait(): Promise<void> {
  return new Promise((r) => setTimeout(r, CATCH_UP_WAIT_MS));
}

/**
 * The partitions a catch-up round drains: those whose wheel is not behind by more than the grace
 * (its next due entry, a lower bound, is later than now - grace). None while an assignment is still
 * being set up: a partition of it not yet claimed may hold higher priorities than the ones ready,
 * and a round then would drain their lower priorities first. See `Scheduler.reconcileOnce`.
 */
export function partitionsToDrain<R extends { nextDueMs(): number }>(
  rts: readonly R[],
  nowMs: number,
  graceMs: number,
  assignmentInProgress = false,
): R[] {
  if (assignmentInProgress) return [];
  return rts.filter((r) => r.nextDueMs() > nowMs - graceMs);
}
