import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { NO_ADMISSION, queueDispatchRates, queueUnstarted, type ClaimAdmission } from '@sched/store';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/**
 * Which queues pause and resume, from their depths: a queue pauses when `counts` reaches `high`
 * and resumes when it is down to `low` (hysteresis: it does not flap around one mark). Pure.
 */
export function admissionStep(
  paused: ReadonlySet<string>,
  counts: ReadonlyMap<string, number>,
  high: number,
  low: number,
): { paused: Set<string>; pausedNow: string[]; resumedNow: string[] } {
  const next = new Set(paused);
  const pausedNow: string[] = [];
  const resumedNow: string[] = [];
  for (const [queue, n] of counts)
    if (!next.has(queue) && n >= high) {
      next.add(queue);
      pausedNow.push(queue);
    }
  for (const queue of paused)
    if ((counts.get(queue) ?? 0) <= low) {
      next.delete(queue);
      resumedNow.push(queue);
    }
  return { paused: next, pausedNow, resumedNow };
}

export interface AdmissionDeps {
  pool: pg.Pool;
  metrics: SchedulerMetrics;
  log: Logger;
  /** Fleet-wide high water mark per queue (0: admission control off). */
  maxUnstarted: number;
  /** The most jobs one claim takes (a room at least this large cannot bind). */
  claimBatchSize: number;
  /** The owned partitions now, and the command topic's partition count. */
  owned(): number[];
  totalPartitions(): number;
  /**
   * What a dispatch-rate bucket holds, in ms of the rate: jobs the rate left waiting are claimed by
   * the catch-up, which runs every reconcile period, so a bucket holding less than one period would
   * dispatch below the rate. Default 1 s.
   */
  rateBurstMs?: number;
  /** Clock for the dispatch-rate buckets (tests). */
  now?: () => number;
}

/**
 * A queue's fleet-wide dispatch rate, this process's share of it: a token bucket refilled at
 * `rate` x owned / all partitions a second, holding at most `burstMs` of that share (at least one
 * job). Pure but for the clock it is given.
 */
export class RateShare {
  private tokens: number;
  private at: number;

  constructor(
    private perSecond: number,
    now: number,
    private readonly burstMs = 1_000,
  ) {
    this.tokens = this.size;
    this.at = now;
  }

  private get size(): number {
    return Math.max(1, (this.perSecond * this.burstMs) / 1000);
  }

  /** A new share (the rate or the owned partitions changed): the tokens held stay, up to the new size. */
  reshare(perSecond: number, now: number): void {
    this.refill(now);
    this.perSecond = perSecond;
    this.tokens = Math.min(this.tokens, this.size);
  }

  private refill(now: number): void {
    if (now > this.at)
      this.tokens = Math.min(this.size, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = Math.max(this.at, now);
  }

  /** Whole jobs that may be dispatched now. */
  room(now: number): number {
    if (this.perSecond <= 0) return 0; // a paused queue
    this.refill(now);
    return Math.max(0, Math.floor(this.tokens));
  }

  take(n: number, now: number): void {
    this.refill(now);
    this.tokens -= n;
  }
}

/**
 * Admission control by queue depth. Every pass counts, per queue, the owned partitions' jobs that
 * were dispatched and not started by any worker yet; each claim may then take at most a queue's
 * room (its share of the high water mark, `SCHED_QUEUE_MAX_UNSTARTED` x owned / all partitions,
 * less that count and less what claims took since), and a queue at the mark takes none until it is
 * down to half of it. Its due jobs wait SCHEDULED (due backlog, in the overdue gauges) instead of
 * piling onto the dispatch topic, where a backlog older than the dispatch lease would be
 * dispatched a second time; the catch-up drains them once the queue has room.
 *
 * A queue's dispatch rate (`queue.max_dispatch_per_second`, fleet-wide, read every pass) bounds the
 * room too: each process takes at most its share by owned partitions, so the fleet dispatches the
 * queue at most at the rate (plus a burst of `rateBurstMs` of it) whatever the number of schedulers.
 * A queue an operator paused (`queue.paused_at`) reads as rate 0: no room until it is resumed.
 */
export class Admission {
  private paused = new Set<string>();
  private counts = new Map<string, number>();
  /** Claimed since the last count, per queue (the count includes them from the next one on). */
  private claimedSince = new Map<string, number>();
  private high = 0;
  private readonly seen = new Set<string>();
  /** Queues with a dispatch rate (`queue.max_dispatch_per_second`): this process's share of each. */
  private rates = new Map<string, RateShare>();
  private readonly now: () => number;

  constructor(private readonly d: AdmissionDeps) {
    this.now = d.now ?? Date.now;
  }

  /** By depth (the high water mark). */
  private get depthOn(): boolean {
    return this.d.maxUnstarted > 0 && this.high > 0;
  }

  private get on(): boolean {
    return this.depthOn || this.rates.size > 0;
  }

  /** How many jobs of a queue a claim may take now (Infinity: neither limit applies to it). */
  roomFor(queue: string): number {
    const rate = this.rates.get(queue);
    const byRate = rate ? rate.room(this.now()) : Infinity;
    if (!this.depthOn) return byRate;
    if (this.paused.has(queue)) return 0;
    const byDepth = Math.max(
      0,
      this.high - (this.counts.get(queue) ?? 0) - (this.claimedSince.get(queue) ?? 0),
    );
    return Math.min(byDepth, byRate);
  }

  /**
   * The limits of the next claim: the room of every queue known, the full room for the others;
   * none at all while no room is smaller than a claim can take (the claim then needs no window).
   */
  limits(): ClaimAdmission {
    if (!this.on) return NO_ADMISSION;
    const queues = [
      ...new Set([...this.counts.keys(), ...this.claimedSince.keys(), ...this.paused, ...this.rates.keys()]),
    ];
    const most = this.d.claimBatchSize;
    const rooms = queues.map((q) => Math.min(most, this.roomFor(q)));
    const otherRoom = this.depthOn ? this.high : most;
    if (otherRoom >= most && rooms.every((r) => r >= most)) return NO_ADMISSION;
    return { queues, rooms, otherRoom };
  }

  /** The queues with no room at all (the catch-up does not plan their jobs). */
  full(): string[] {
    if (!this.on) return [];
    const l = this.limits();
    return l.queues.filter((_, i) => l.rooms[i] === 0);
  }

  /** Jobs a claim (or a create) dispatched: they take room until the next count. */
  onClaimed(jobs: readonly { queue: string }[]): void {
    if (!this.on) return;
    const now = this.now();
    for (const j of jobs) {
      this.claimedSince.set(j.queue, (this.claimedSince.get(j.queue) ?? 0) + 1);
      this.rates.get(j.queue)?.take(1, now);
    }
  }

  /** Reads the queues' dispatch rates and this process's share of each (its owned partitions). */
  async readRates(): Promise<void> {
    const rates = await queueDispatchRates(this.d.pool);
    const share = this.d.owned().length / Math.max(1, this.d.totalPartitions());
    const now = this.now();
    const next = new Map<string, RateShare>();
    for (const [queue, rate] of rates) {
      const held = this.rates.get(queue);
      if (held) held.reshare(rate * share, now);
      next.set(queue, held ?? new RateShare(rate * share, now, this.d.rateBurstMs));
    }
    this.rates = next;
  }

  async once(): Promise<void> {
    await this.readRates();
    if (this.d.maxUnstarted <= 0) return;
    const owned = this.d.owned();
    const total = Math.max(1, this.d.totalPartitions());
    const claimedBefore = this.claimedSince;
    this.claimedSince = new Map();
    let counts: Map<string, number>;
    try {
      counts = await queueUnstarted(this.d.pool, owned);
    } catch (err) {
      // Keep what the claims took: the room stays as small as it was.
      for (const [q, n] of claimedBefore) this.claimedSince.set(q, (this.claimedSince.get(q) ?? 0) + n);
      throw err;
    }
    const high = Math.max(1, Math.ceil((this.d.maxUnstarted * owned.length) / total));
    const low = Math.floor(high / 2);
    const step = admissionStep(this.paused, counts, high, low);
    this.paused = step.paused;
    this.counts = counts;
    this.high = owned.length > 0 ? high : 0;
    for (const queue of step.pausedNow)
      this.d.log.warn(
        { queue, unstarted: counts.get(queue), high, low },
        'queue admission paused: too many jobs dispatched and not started; its due jobs wait as backlog',
      );
    for (const queue of step.resumedNow)
      this.d.log.info({ queue, unstarted: counts.get(queue) ?? 0, low }, 'queue admission resumed');
    for (const queue of counts.keys()) this.seen.add(queue);
    for (const queue of this.seen) {
      this.d.metrics.queueUnstarted.set({ queue }, counts.get(queue) ?? 0);
      this.d.metrics.queueAdmissionPaused.set({ queue }, this.paused.has(queue) ? 1 : 0);
    }
  }
}
