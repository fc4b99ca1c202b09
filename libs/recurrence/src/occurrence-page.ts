/** How DST affected an occurrence. */
export type OccurrenceDst =
  /** The wall time exists once (or the rule is an interval, which is DST-agnostic). */
  | 'NONE'
  /** The wall time fell in a DST gap; policy SHIFT moved it to the first instant after the gap. */
  | 'SHIFTED'
  /** The wall time is repeated; this is its first (earlier) instant. */
  | 'REPEATED_FIRST'
  /** The wall time is repeated; this is its second (later) instant. */
  | 'REPEATED_SECOND';

/** One fire time of a schedule. */
export interface Occurrence {
  /**
   * Nominal fire time: the UTC instant the rule names (for a shifted occurrence, the shifted
   * instant), integer ms since the epoch. Unique within a schedule: use it for the occurrence id.
   */
  atMs: number;
  /**
   * The wall-clock time the rule matched, ISO local without offset ('2026-03-08T02:30:00'; `.SSS`
   * only when not zero). When several wall times of one gap shift to the same instant they collapse
   * into one occurrence, which keeps the earliest of them (or the wall time that exists, if one does).
   */
  localWall: string;
  /** `atMs` in the schedule's zone, ISO with offset: '2026-03-08T03:00:00-04:00'. */
  local: string;
  dst: OccurrenceDst;
}

/** A wall time that matched the rule but does not exist in the zone (policy SKIP): for the ledger. */
export interface SkippedOccurrence {
  localWall: string;
  reason: 'DST_SKIPPED';
  /**
   * The instant the gap began (the transition instant; its local time is the gap's end). Several
   * skipped wall times of one gap share it, and an occurrence may sit on it too.
   */
  atMs: number;
}

/** A page of occurrences in increasing `atMs`, with the DST-skipped wall times of the same span. */
export interface OccurrencePage {
  occurrences: Occurrence[];
  /** In increasing `atMs`, then `localWall`. */
  skipped: SkippedOccurrence[];
  /**
   * The page is complete for the span (after, coveredUntilMs]: every occurrence and skipped wall
   * time with `atMs` in it is in the page, none after it is. Continue with `next(coveredUntilMs, …)`.
   */
  coveredUntilMs: number;
  /** True when nothing comes after `coveredUntilMs`: the schedule's end (or the 9999 horizon) was reached. */
  exhausted: boolean;
}

/**
 * Builds a page from candidates that arrive in (nearly) increasing time order: only repeated wall
 * times under policy BOTH and gap wall times under SHIFT arrive out of order, by at most a few hours.
 *
 * Keeps the candidates with `lowMs < atMs <= cutMs`, at most `limit` occurrences (unique `atMs`)
 * and about `skippedCap` skipped records. `cutMs` starts at the span's end and drops to the
 * `limit`-th occurrence (or `skippedCap`-th skipped record) once that many are held: nothing after
 * it can enter the page any more, which tells the producer when to stop. `limit` must be >= 1.
 */
export class PageBuilder {
  readonly occurrences: Occurrence[] = [];
  readonly skipped: SkippedOccurrence[] = [];
  cutMs: number;

  constructor(
    private readonly lowMs: number,
    highMs: number,
    private readonly limit: number,
    private readonly skippedCap: number,
  ) {
    this.cutMs = highMs;
  }

  /** Whether a candidate at `atMs` can still enter the page (check before building it). */
  wants(atMs: number): boolean {
    return atMs > this.lowMs && atMs <= this.cutMs;
  }

  addOccurrence(o: Occurrence): void {
    if (!this.wants(o.atMs)) return;
    const list = this.occurrences;
    const last = list[list.length - 1];
    // Fast path: in order.
    const i =
      last === undefined || last.atMs < o.atMs
        ? list.length
        : lowerBound(list.length, (k) => list[k]!.atMs < o.atMs);
    const same = list[i];
    if (same !== undefined && same.atMs === o.atMs) {
      // Gap wall times shifted onto one instant (or onto a wall time that exists there): keep one,
      // preferring the one that was not shifted, else the earliest wall time (the first to arrive).
      if (same.dst === 'SHIFTED' && o.dst !== 'SHIFTED') list[i] = o;
      return;
    }
    if (i === list.length) list.push(o);
    else list.splice(i, 0, o);
    if (list.length > this.limit) list.length = this.limit;
    if (list.length === this.limit) this.lowerCut(list[this.limit - 1]!.atMs);
  }

  addSkipped(s: SkippedOccurrence): void {
    if (!this.wants(s.atMs)) return;
    const list = this.skipped;
    const last = list[list.length - 1];
    const i =
      last === undefined || compareSkipped(last, s) <= 0
        ? list.length
        : lowerBound(list.length, (k) => compareSkipped(list[k]!, s) < 0);
    if (i === list.length) list.push(s);
    else list.splice(i, 0, s);
    // Records sharing the cut instant stay together, so the page remains complete up to the cut.
    if (list.length >= this.skippedCap) this.lowerCut(list[this.skippedCap - 1]!.atMs);
  }

  private lowerCut(atMs: number): void {
    if (atMs >= this.cutMs) return;
    this.cutMs = atMs;
    const occ = this.occurrences;
    while (occ.length > 0 && occ[occ.length - 1]!.atMs > atMs) occ.pop();
    const sk = this.skipped;
    while (sk.length > 0 && sk[sk.length - 1]!.atMs > atMs) sk.pop();
  }
}

function compareSkipped(a: SkippedOccurrence, b: SkippedOccurrence): number {
  if (a.atMs !== b.atMs) return a.atMs - b.atMs;
  return a.localWall < b.localWall ? -1 : a.localWall > b.localWall ? 1 : 0;
}

/** First index in [0, n) where `before(index)` is false (`before` true on a prefix). */
function lowerBound(n: number, before: (index: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
