import type { IANAZone } from 'luxon';

const HOUR_MS = 3_600_000;

/**
 * Bound on any UTC offset. Real offsets since 1970 lie in [-12 h, +14 h]; 18 h leaves room and is the
 * ISO 8601 / java.time limit. Every instant of wall time W lies in [W - 18 h, W + 18 h].
 */
export const OFFSET_BOUND_MS = 18 * HOUR_MS;

/**
 * Distance between two offset probes. Offset changes between probes are bisected to the millisecond.
 * Assumption: a zone never changes offset and changes back within one probe step. The closest two
 * transitions of any zone since 1970 are 7 days apart (tzdata 2025c), a 7x margin.
 */
const PROBE_STEP_MS = 24 * HOUR_MS;

/** How a wall time maps to real instants in a zone. Offsets are UTC offsets in ms (local = UTC + offset). */
export type WallInstants =
  /** The usual case: exactly one instant. */
  | { kind: 'UNIQUE'; atMs: number; offsetMs: number }
  /** The wall time is repeated (clocks went back): two instants, `first` earlier. */
  | { kind: 'REPEATED'; firstAtMs: number; firstOffsetMs: number; secondAtMs: number; secondOffsetMs: number }
  /**
   * The wall time does not exist (clocks went forward over it). `gapAtMs` is the transition instant:
   * the first valid instant after the gap, whose local time (with `offsetAfterMs`) is the gap's end.
   */
  | { kind: 'SKIPPED'; gapAtMs: number; offsetAfterMs: number };

/**
 * The offsets of one zone over a span of time, discovered from luxon's `IANAZone` (ICU tz data) for one
 * generation call and thrown away after it: nothing about offsets outlives a call, and every wall
 * time is resolved against the zone's actual transitions around it, never against a remembered
 * offset. Probing every 24 h and bisecting each change costs about one luxon lookup (~8 µs) per day
 * covered plus ~27 per transition, instead of three per resolved wall time.
 *
 * Coverage is one contiguous span that only grows forward; a request starting after it (or before it)
 * restarts it there. Not shareable between concurrent users (it is per call anyway).
 */
export class ZoneTimeline {
  /** Segment i has offset `offsets[i]` on [starts[i], starts[i + 1]); the last one up to `coveredTo`. */
  private readonly starts: number[] = [];
  private readonly offsets: number[] = [];
  /** Last instant whose offset is known (inclusive). */
  private coveredTo = Number.NEGATIVE_INFINITY;

  constructor(private readonly zone: IANAZone) {}

  /** Makes the offsets on [fromMs, toMs] known. */
  cover(fromMs: number, toMs: number): void {
    // Restart rather than probe a long stretch nobody asked about.
    if (this.starts.length === 0 || fromMs > this.coveredTo + PROBE_STEP_MS || fromMs < this.starts[0]!) {
      this.starts.length = 0;
      this.offsets.length = 0;
      this.starts.push(fromMs);
      this.offsets.push(this.lookup(fromMs));
      this.coveredTo = fromMs;
    }
    // Whole steps, even past toMs: callers advance a little at a time, and each call probing up to
    // its own toMs would cost one lookup per call.
    while (this.coveredTo < toMs) {
      const probe = this.coveredTo + PROBE_STEP_MS;
      const offset = this.lookup(probe);
      // Usually one change; a loop also finds several changes between two probes, as long as the
      // offset does not come back to a previous value.
      let from = this.coveredTo;
      while (offset !== this.offsets[this.offsets.length - 1]) from = this.bisect(from, probe);
      this.coveredTo = probe;
    }
  }

  /** Offset at instant `atMs`, which must be covered. */
  offsetAt(atMs: number): number {
    return this.offsets[this.segmentAt(atMs)]!;
  }

  /** Smallest offset over [fromMs, toMs]; -OFFSET_BOUND_MS when the span is not all covered. */
  minOffset(fromMs: number, toMs: number): number {
    if (!this.covers(fromMs, toMs)) return -OFFSET_BOUND_MS;
    let min = Number.POSITIVE_INFINITY;
    for (let i = this.segmentAt(fromMs); i < this.starts.length && this.starts[i]! <= toMs; i++) {
      min = Math.min(min, this.offsets[i]!);
    }
    return min;
  }

  /** Largest offset over [fromMs, toMs]; +OFFSET_BOUND_MS when the span is not all covered. */
  maxOffset(fromMs: number, toMs: number): number {
    if (!this.covers(fromMs, toMs)) return OFFSET_BOUND_MS;
    let max = Number.NEGATIVE_INFINITY;
    for (let i = this.segmentAt(fromMs); i < this.starts.length && this.starts[i]! <= toMs; i++) {
      max = Math.max(max, this.offsets[i]!);
    }
    return max;
  }

  /**
   * The instants of wall time `wallMs` (see `wall-clock.ts`): each segment offset o for which
   * W - o falls inside that segment is one; none means W is in a gap.
   */
  resolve(wallMs: number): WallInstants {
    const from = wallMs - OFFSET_BOUND_MS;
    const to = wallMs + OFFSET_BOUND_MS;
    this.cover(from, to);
    const first = this.segmentAt(from);
    let found = 0;
    let atA = 0;
    let offA = 0;
    let atB = 0;
    let offB = 0;
    for (let i = first; i < this.starts.length && this.starts[i]! <= to; i++) {
      const offset = this.offsets[i]!;
      const at = wallMs - offset;
      const end = i + 1 < this.starts.length ? this.starts[i + 1]! : this.coveredTo + 1;
      if (at < this.starts[i]! || at >= end) continue;
      // Segments are in time order, so candidates come out sorted; keep the first and the last.
      if (found === 0) {
        atA = at;
        offA = offset;
      } else {
        atB = at;
        offB = offset;
      }
      found++;
    }
    if (found === 1) return { kind: 'UNIQUE', atMs: atA, offsetMs: offA };
    if (found >= 2)
      return { kind: 'REPEATED', firstAtMs: atA, firstOffsetMs: offA, secondAtMs: atB, secondOffsetMs: offB };
    // In a gap: the transition T whose jump [T + before, T + after) contains W.
    for (let i = Math.max(first, 1); i < this.starts.length && this.starts[i]! <= to; i++) {
      const at = this.starts[i]!;
      const before = this.offsets[i - 1]!;
      const after = this.offsets[i]!;
      if (after > before && at + before <= wallMs && wallMs < at + after) {
        return { kind: 'SKIPPED', gapAtMs: at, offsetAfterMs: after };
      }
    }
    throw new Error(
      `zone ${this.zone.name}: wall time ${wallMs} has no instant and is in no gap (tz data assumption broken)`,
    );
  }

  private covers(fromMs: number, toMs: number): boolean {
    return this.starts.length > 0 && fromMs >= this.starts[0]! && toMs <= this.coveredTo;
  }

  /** Index of the segment containing `atMs` (>= starts[0]): binary search. */
  private segmentAt(atMs: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts[mid]! <= atMs) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * Finds the first instant in (fromMs, toMs] whose offset differs from the last segment's, appends
   * the segment starting there and returns its start. Precondition: the offset at toMs differs.
   */
  private bisect(fromMs: number, toMs: number): number {
    const before = this.offsets[this.offsets.length - 1]!;
    let lo = fromMs;
    let hi = toMs;
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2);
      if (this.lookup(mid) === before) lo = mid;
      else hi = mid;
    }
    this.starts.push(hi);
    this.offsets.push(this.lookup(hi));
    return hi;
  }

  /** The zone's offset at an instant, in ms, straight from luxon (which returns minutes). */
  private lookup(atMs: number): number {
    return Math.round(this.zone.offset(atMs) * 60_000);
  }
}
