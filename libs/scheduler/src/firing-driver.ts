import { LogThrottle, type Logger } from '@sched/logging';
import { FencedError } from '@sched/store';
import type { ClaimGroup, Claimer, RoundPhases } from './claimer.js';
import type { SchedulerConfig } from './config.js';
import type { DueEntry } from './due-index.js';
import type { PartitionRuntime } from './partition-runtime.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';
import {
  SCHEDULE_ENTRY_PREFIX,
  type GenerationEffects,
  type ScheduleGenerator,
} from './schedule-generator.js';

export interface FiringDeps {
  config: SchedulerConfig;
  claimer: Claimer;
  generator: ScheduleGenerator;
  metrics: SchedulerMetrics;
  log: Logger;
  /** The partitions owned now (closed ones are skipped). */
  runtimes(): PartitionRuntime[];
  /** Gives a partition up (fenced, revoked). */
  /** Lets a partition's runtime go (only if it is still the partition's current one). */
  release(rt: PartitionRuntime, why: string): void;
  /** Applies what a schedule generation pass decided to the partition's index. */
  applyGeneration(rt: PartitionRuntime, fx: GenerationEffects): void;
}

/**
 * Most due entries one round moves out of a partition's wheel into its ready set: bounds the
 * synchronous work of a round (~4 ms a partition) while letting the lookahead fill in a few rounds.
 */
export const FAIR_REFILL = 4_096;
/** Most due entries one round moves into ready sets over all partitions (~16 ms of work at most). */
export const FAIR_REFILL_ROUND = 16_384;

/** Slow claim rounds are logged at most this often (each is counted in the metric). */
export const SLOW_LOG_EVERY_MS = 1_000;

/**
 * The scheduler's clock: sleeps until the earliest due entry of any owned partition (at most
 * `maxSleepMs`), then runs firing rounds. Owns no state the scheduler needs besides its timer.
 */
export class FiringDriver {
  private timer: NodeJS.Timeout | null = null;
  private armedAt = Infinity;
  private roundsInFlight = 0;
  private roundCursor = 0;
  /** When the last firing round started (Date.now()): rounds start at least `minRoundGapMs` apart. */
  private lastRoundAt = -Infinity;
  private stopping = false;
  private readonly slowLog = new LogThrottle(SLOW_LOG_EVERY_MS);

  constructor(private readonly d: FiringDeps) {}

  stop(): void {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Arms the driver for the earliest due entry of any owned partition (or maxSleepMs). */
  arm(force = false): void {
    if (this.stopping) return;
    let next = Infinity;
    // A held partition (takeover hold) wakes the driver when its hold ends (`arm(true)`).
    for (const rt of this.d.runtimes()) if (!rt.held) next = Math.min(next, rt.nextDueMs());
    const at = Math.max(
      Math.min(next, Date.now() + this.d.config.maxSleepMs),
      this.lastRoundAt + this.d.config.minRoundGapMs,
    );
    if (!force && this.timer && at >= this.armedAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.armedAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.armedAt = Infinity;
        this.fireDue();
        this.arm();
      },
      Math.max(0, at - Date.now()),
    );
  }

  /**
   * Starts firing rounds while some owned partition has expired entries, at most
   * `claimConcurrency` at once. A round takes the due entries of every partition (at most
   * `claimBatchSize` in all, partitions served in rotating order) and claims them in one
   * transaction, so the number of transactions follows the load, not the partition count. Rounds
   * start at least `minRoundGapMs` apart: at a steady trickle (1,000 due/s) a round per
   * millisecond would carry one job and pay a transaction, a WAL flush and a round trip for it;
   * waiting the gap lets a round carry what fell due meanwhile (a backlog fills whole batches anyway).
   */
  fireDue(): void {
    while (this.roundsInFlight < this.d.config.claimConcurrency && !this.stopping) {
      if (Date.now() < this.lastRoundAt + this.d.config.minRoundGapMs) return; // arm() waits for the gap
      const groups = this.collectDue();
      if (groups.length === 0) return;
      this.lastRoundAt = Date.now();
      this.roundsInFlight++;
      this.round(groups)
        .catch((err: unknown) =>
          this.d.log.error({ err }, 'claim round failed; entries put back, the reconciler is the backstop'),
        )
        .finally(() => {
          this.roundsInFlight--;
          this.fireDue();
          this.arm();
        });
    }
  }

  /**
   * Takes due entries of the owned partitions, up to claimBatchSize in all, partitions in rotating
   * order. With a fair lookahead (`fairLookahead` > 0) each partition first moves up to
   * `FAIR_REFILL` (or a batch, if larger) of its due entries out of its wheel into its ready set
   * (holding at most the lookahead; at most `FAIR_REFILL_ROUND` over all partitions a round, from
   * the rotating first one, so that a round's synchronous work stays bounded; in a 100k burst over
   * 12 partitions a few rounds take all of it), and
   * the round takes from that by priority class and tenant (`FairReady`): in a burst larger than
   * a round, a small tenant's jobs due in the same second, or a few high-priority ones, are not
   * left behind everything due a moment before them.
   */
  private collectDue(): ClaimGroup[] {
    const now = Date.now();
    const rts = this.d.runtimes();
    const groups: ClaimGroup[] = [];
    const { claimBatchSize, fairLookahead } = this.d.config;
    let budget = claimBatchSize;
    if (fairLookahead > 0) {
      let refill = Math.max(claimBatchSize, FAIR_REFILL_ROUND);
      for (let k = 0; k < rts.length && refill > 0; k++) {
        const rt = rts[(this.roundCursor + k) % rts.length]!;
        const room = Math.min(Math.max(claimBatchSize, FAIR_REFILL), fairLookahead - rt.ready.size, refill);
        if (rt.closed || rt.held || room <= 0 || rt.index.nextDueMs() > now) continue;
        const moved = rt.index.advance(now, room);
        for (const e of moved) rt.ready.push(e);
        refill -= moved.length;
      }
    }
    for (let k = 0; k < rts.length && budget > 0; k++) {
      const rt = rts[(this.roundCursor + k) % rts.length]!;
      // Held until the commands on Kafka at takeover are applied (see PartitionOwnership).
      if (rt.closed || rt.held) continue;
      let entries: DueEntry[];
      if (fairLookahead > 0) {
        if (rt.ready.size === 0) continue;
        entries = rt.ready.take(budget);
      } else {
        if (rt.index.nextDueMs() > now) continue;
        entries = rt.index.advance(now, budget);
      }
      if (entries.length === 0) continue;
      budget -= entries.length;
      groups.push({ rt, entries });
    }
    this.roundCursor = (this.roundCursor + 1) % Math.max(1, rts.length);
    return groups;
  }

  /** One firing round: schedule entries run the generator; job entries are claimed together. */
  private async round(groups: ClaimGroup[]): Promise<void> {
    const collectedAt = Date.now();
    let oldestDueMs = Infinity;
    for (const g of groups) for (const e of g.entries) if (e.dueMs < oldestDueMs) oldestDueMs = e.dueMs;
    const jobs: ClaimGroup[] = [];
    for (const g of groups) {
      const schedules = g.entries.filter((e) => e.jobId.startsWith(SCHEDULE_ENTRY_PREFIX));
      if (schedules.length > 0 && !g.rt.closed) {
        const ids = schedules.map((e) => e.jobId.slice(SCHEDULE_ENTRY_PREFIX.length));
        try {
          this.d.applyGeneration(g.rt, await this.d.generator.runOnce(g.rt, ids));
        } catch (err) {
          if (err instanceof FencedError) this.d.release(g.rt, 'fenced');
          else this.d.log.error({ err, partition: g.rt.partition }, 'schedule generation failed; will retry');
        }
      }
      const due =
        schedules.length === 0
          ? g.entries
          : g.entries.filter((e) => !e.jobId.startsWith(SCHEDULE_ENTRY_PREFIX));
      if (due.length > 0 && !g.rt.closed) jobs.push({ rt: g.rt, entries: due });
    }
    if (jobs.length === 0) return;
    const claimStart = Date.now();
    try {
      const { outcomes, fenced, phasesMs } = await this.d.claimer.claimRound(jobs);
      this.timeRound(jobs, { oldestDueMs, collectedAt, claimStart, phasesMs });
      for (const rt of fenced) this.d.release(rt, 'fenced');
      for (const g of jobs) {
        const out = outcomes.get(g.rt.partition);
        if (out && !g.rt.closed && out.notYetDue.length > 0) {
          // Not due in database time yet (its clock behind ours): back into the index, with the tag it had.
          const tags = new Map(g.entries.map((e) => [e.jobId, e.tag]));
          for (const e of out.notYetDue) g.rt.index.upsert(e.jobId, e.dueMs, tags.get(e.jobId) ?? 0);
        }
      }
    } catch (err) {
      // Not claimed: the jobs stay SCHEDULED in Postgres; put them back so a transient failure
      // costs a retry, not a reconciliation delay.
      if (err instanceof FencedError) {
        for (const g of jobs) if (g.rt.partition === err.partition) this.d.release(g.rt, 'fenced');
      }
      for (const g of jobs)
        if (!g.rt.closed)
          for (const e of g.entries) g.rt.index.upsert(e.jobId, Math.max(e.dueMs, Date.now() + 100), e.tag);
      throw err;
    }
  }

  /**
   * Records the round's duration, and explains a late one: when the oldest entry's due time is more
   * than `slowRoundMs` behind the commit, a warning says where the time went (waiting to be
   * collected: a late timer, a busy event loop, both round slots taken, or, for a job created
   * already due, the command's own trip; schedule generation; a pool connection; the claim
   * statement with its commit). At most one warning per `SLOW_LOG_EVERY_MS`: an overloaded scheduler has a late round
   * every few milliseconds, and a synchronous log line for each (stdout to a pipe is synchronous)
   * fed the overload. The next warning reports how many were left out (the metric counts them all).
   */
  private timeRound(
    jobs: ClaimGroup[],
    t: { oldestDueMs: number; collectedAt: number; claimStart: number; phasesMs: RoundPhases },
  ): void {
    const end = Date.now();
    this.d.metrics.claimRound.observe((end - t.claimStart) / 1000);
    const lateMs = end - t.oldestDueMs;
    if (!(lateMs > this.d.config.slowRoundMs)) return;
    this.d.metrics.slowRounds.inc();
    const pass = this.slowLog.take('round', end);
    if (!pass) return;
    const r = (ms: number) => Math.round(ms * 10) / 10;
    this.d.log.warn(
      {
        lateMs,
        waitedForCollectMs: t.collectedAt - t.oldestDueMs,
        generationMs: t.claimStart - t.collectedAt,
        connectMs: r(t.phasesMs.connect),
        claimMs: r(t.phasesMs.claim),
        jobs: jobs.reduce((n, g) => n + g.entries.length, 0),
        partitions: jobs.length,
        leftOutSinceLast: pass.dropped,
      },
      'slow claim round: the oldest job in it was claimed late',
    );
  }
}
