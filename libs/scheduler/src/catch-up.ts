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
  /** Gives up a partition's runtime whose epoch moved on (only if it is still the current one). */
  release(rt: PartitionRuntime): void;
  stopping(): boolean;
}

/**
 * A plan is claimed for at least this many times as long as its read took, so that sorting a large
 * backlog stays at most a fifth of a drain's time (1M overdue rows: a 3-5 s sort, a 20 s plan).
 */
const PLAN_SPAN_PER_READ = 4;
/** The longest a plan is kept: a job that falls overdue meanwhile waits at most this long for a read. */
const MAX_PLAN_SPAN_MS = 30_000;
/** The most rows one plan holds (~150 B each in this process). */
const MAX_PLAN_ROWS = 200_000;

/** A read's drain order, claimed over one pass or several. */
interface Plan {
  jobs: OverdueJob[];
  /** The next row to claim. */
  next: number;
  claimed: number;
  /** The rows asked for, and how many came back (fewer: the whole backlog fit). */
  size: number;
  fetched: number;
  /** The partitions it was read for, as `partitionKey` gives them. */
  partitions: string;
  expiresAt: number;
}

/** A read of the drain order in flight: the next plan. */
interface Read {
  partitions: string;
  size: number;
  spanMs: number;
  startedAt: number;
  /** Rows and when they came. Never rejects for a read ahead (`after` set): undefined on failure. */
  result: Promise<{ jobs: OverdueJob[]; at: number } | undefined>;
  /** For a read ahead: the plan being claimed when it started and its next row then. The rows
   * of it tried from then on (claimed, or held by another transaction) are left out of this
   * read's plan; those it never got to (it expired first) stay in, in their place. */
  after?: { plan: Plan; from: number };
}

/**
 * The catch-up drain of an overdue backlog (after an outage, or jobs the wheel missed): highest
 * priority first, tenants in turn within a priority (`jobOverdueFair`), claimed by id with the
 * firing round's fenced SKIP LOCKED claim, at most `catchUpRatePerSec` per process (any 1.1 s
 * window).
 */
export class CatchUpDrain {
  private readonly rate: RateWindow;
  private held: Plan | undefined;
  /** The next plan's read, started ahead while the held plan is claimed (large backlogs only). */
  private ahead: Read | undefined;
  private lastReadMs = 0;

  constructor(private readonly d: CatchUpDeps) {
    this.rate = new RateWindow(d.config.catchUpRatePerSec);
  }

  /**
   * How long the next plan serves: a period, or `PLAN_SPAN_PER_READ` times the last read when the
   * backlog is so large that its sort takes longer than a quarter of a period (at most 30 s).
   */
  planSpanMs(): number {
    const spanMs = Math.max(this.d.config.reconcileEveryMs, PLAN_SPAN_PER_READ * this.lastReadMs);
    return Math.min(MAX_PLAN_SPAN_MS, spanMs);
  }

  /** The rows the next read asks for: the plan's span at the rate, at least a claim batch. */
  planSize(): number {
    const { claimBatchSize, catchUpRatePerSec } = this.d.config;
    const atRate = Math.ceil((catchUpRatePerSec * this.planSpanMs()) / 1000);
    return Math.max(claimBatchSize, Math.min(MAX_PLAN_ROWS, atRate));
  }

  /**
   * One pass over the partitions given (see `partitionsToDrain`); returns how many it claimed.
   * A read (one sort of the backlog: ~0.3-0.5 s of Postgres for 200k overdue rows, 3-5 s for 1M)
   * gives the drain order for `planSpanMs` at the rate; a plan not used up in one pass is kept for
   * the next ones until it is used up or expires, or the partitions to drain change. Between claims
   * the pass waits for the rate window to move on (it frees 50 ms slots) rather than for the next
   * pass, so a backlog drains at the rate, not at a fraction of it. A pass reads only within its
   * period; the claims after a read get a period of their own, counted from the read. When reads
   * are slow (more than a quarter of a period), the next plan's read starts while the held plan
   * still has about one read's worth of claims left, so claims go on while Postgres sorts.
   */
  async pass(drain: PartitionRuntime[]): Promise<number> {
    const { claimBatchSize, reconcileEveryMs } = this.d.config;
    // A period of 100 ms or less still gets one read and a batch a pass.
    const budgetMs = Math.max(CATCH_UP_WAIT_MS, reconcileEveryMs - CATCH_UP_WAIT_MS);
    const readEnds = Date.now() + budgetMs;
    let claimEnds = readEnds;
    const partitions = partitionKey(drain);
    let total = 0;
    while (drain.length > 0 && !this.d.stopping()) {
      let plan = this.held;
      if (plan && (plan.partitions !== partitions || Date.now() >= plan.expiresAt)) {
        this.held = plan = undefined;
      }
      if (this.ahead && this.ahead.partitions !== partitions) this.ahead = undefined;
      if (plan && plan.next >= plan.jobs.length) {
        this.held = undefined;
        // Read again only while whole plans are claimed: rows another transaction holds, or a
        // backlog smaller than a plan, end the pass (the next one looks again).
        if (plan.fetched < plan.size || plan.claimed < plan.jobs.length) break;
        continue;
      }
      const now = Date.now();
      if (now >= (plan ? claimEnds : readEnds)) break;
      if (this.rate.available() === 0) {
        // The rate is spent: wait for its window within this pass's time.
        await wait();
        continue;
      }
      if (!plan) {
        const read = this.ahead ?? this.read(drain, partitions);
        this.ahead = undefined;
        const got = await read.result;
        if (!got) continue; // a read ahead failed: read now
        // Only a read whose plan is used sizes the next one (not one dropped with its partitions).
        this.lastReadMs = got.at - read.startedAt;
        this.d.metrics.catchUpReadSeconds.observe(this.lastReadMs / 1000);
        let jobs = got.jobs;
        if (read.after) {
          const { plan: before, from } = read.after;
          const tried = new Set(before.jobs.slice(from, before.next).map((j) => j.jobId));
          jobs = jobs.filter((j) => !tried.has(j.jobId));
        }
        // It serves the span it was sized for, or longer if this read was the slower one.
        const expiresAt = got.at + Math.max(read.spanMs, this.planSpanMs());
        const size = read.size;
        this.held = { jobs, next: 0, claimed: 0, size, fetched: got.jobs.length, partitions, expiresAt };
        claimEnds = Math.max(claimEnds, Date.now() + budgetMs);
        continue;
      }
      this.readAheadFor(plan, drain);
      const allowed = this.rate.take(Math.min(claimBatchSize, plan.jobs.length - plan.next));
      if (allowed === 0) {
        await wait();
        continue;
      }
      const got = await this.claim(plan.jobs.slice(plan.next, plan.next + allowed));
      plan.next += allowed;
      plan.claimed += got;
      this.rate.refund(allowed - got);
      total += got;
    }
    return total;
  }

  /** Starts a read of the drain order; a read ahead (`after`) never rejects (undefined instead). */
  private read(drain: PartitionRuntime[], partitions: string, after?: Read['after']): Read {
    const spanMs = this.planSpanMs();
    const size = this.planSize();
    const startedAt = Date.now();
    const reading = this.d.claimer
      .overdue(drain, size, this.d.config.reconcileGraceMs)
      .then((jobs) => ({ jobs, at: Date.now() }));
    // A failed read ahead is read again, at once, by the pass (whose read's error is logged).
    const result = after ? reading.catch(() => undefined) : reading;
    return { partitions, size, spanMs, startedAt, result, after };
  }

  /**
   * Starts the next plan's read while `plan` is claimed, when reads are slow enough to matter
   * (over a quarter of a period), the backlog is larger than the plan, and what is left of it
   * would take about one read's time to claim at the rate.
   */
  private readAheadFor(plan: Plan, drain: PartitionRuntime[]): void {
    const { reconcileEveryMs, catchUpRatePerSec } = this.d.config;
    if (this.ahead || plan.next === 0 || plan.fetched < plan.size) return;
    if (this.lastReadMs * PLAN_SPAN_PER_READ <= reconcileEveryMs) return;
    const claimsDuringRead = (catchUpRatePerSec * this.lastReadMs * 1.25) / 1000;
    if (plan.jobs.length - plan.next > claimsDuringRead) return;
    this.ahead = this.read(drain, plan.partitions, { plan, from: plan.next });
  }

  /** Claims overdue jobs by id as one firing round does (fenced, SKIP LOCKED); returns how many. */
  private async claim(jobs: OverdueJob[]): Promise<number> {
    const byPartition = new Map<number, ClaimGroup>();
    for (const j of jobs) {
      const rt = this.d.runtime(j.partition);
      // Held (taken over since the plan was read): its commands are applied first.
      if (!rt || rt.closed || rt.held) continue;
      let g = byPartition.get(j.partition);
      if (!g) byPartition.set(j.partition, (g = { rt, entries: [] }));
      g.entries.push({ jobId: j.jobId, dueMs: j.dueAtMs, tag: this.d.fireTags.tag(j.tenantId, j.priority) });
    }
    if (byPartition.size === 0) return 0;
    const { outcomes, fenced } = await this.d.claimer.claimRound([...byPartition.values()], 'reconcile');
    for (const rt of fenced) this.d.release(rt);
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

/** The partitions of a drain, as a plan records them. */
function partitionKey(drain: readonly PartitionRuntime[]): string {
  return drain
    .map((r) => r.partition)
    .sort((a, b) => a - b)
    .join(',');
}

function wait(): Promise<void> {
  return new Promise((r) => setTimeout(r, CATCH_UP_WAIT_MS));
}

/**
 * The partitions a catch-up round drains: those whose wheel is not behind by more than the grace
 * (its next due entry, a lower bound, is later than now - grace). None while an assignment is still
 * being set up: a partition of it not yet claimed may hold higher priorities than the ones ready,
 * and a round then would drain their lower priorities first. See `Reconciler.once`.
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
