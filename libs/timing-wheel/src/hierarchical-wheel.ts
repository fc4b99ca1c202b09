import { BucketLevels } from './bucket-levels';
import { type EntryStore, POS, RECORD_WORDS } from './entry-store';
import { OverdueHeap } from './overdue-heap';

/** Entries moved per slice when splitting a coarse bucket (scratch size). */
const MOVE_CHUNK = 256;

/**
 * Touches the memory that expiring records `records[0..count)` will need (their id slots and id-table
 * cells) so that it is in cache when they come due; returns a value to keep (so that the loads stay).
 */
export type Warmer = (records: Int32Array, count: number) => number;

/**
 * The wheel proper, over record numbers (the job ids are `TimingWheel`'s business): where each entry
 * waits, and which ones are due next. See `TimingWheel` for the layout, a worked example and the
 * contract; `BucketLevels` for the placement rule.
 *
 * Records marked dead (cancelled by id, see `EntryStore`) still sit in their bucket or the overdue heap;
 * every path that takes records out of a bucket or the heap (`collect`, `split`) frees them instead of
 * returning or moving them. They count against the cascade budget like any moved entry.
 *
 * Invariants, with cursor = the wheel's time:
 * - every entry due before the cursor has been collected, except those in the overdue heap, which were
 *   added already late and leave first;
 * - on every coarse level j, the bucket holding the cursor is empty; the next one is split (moved one
 *   level down) before the cursor reaches it, which the half-span bucket size makes possible one bucket
 *   ahead of time.
 */
export class HierarchicalWheel {
  readonly levels: BucketLevels;
  readonly overdue: OverdueHeap;
  private readonly moving = new Int32Array(MOVE_CHUNK);
  private readonly movingDue = new Float64Array(MOVE_CHUNK);
  /** Keeps the warming loads observable so that the compiler cannot drop them. */
  private sink = 0;

  /**
   * `warm` is called on the entries of each level-1 bucket as it is split into level 0, at most about
   * a second (one level-0 revolution) before they are due: their id slots and table cells, which
   * expiring needs, are then fetched in parallel and ahead of time instead of one dependent miss after
   * another inside the `advance` that returns them.
   */
  constructor(
    bits: number,
    startMs: number,
    private readonly store: EntryStore,
    private readonly cascadeBudget: number,
    private readonly warm: Warmer = () => 0,
  ) {
    this.levels = new BucketLevels(bits, startMs, store);
    this.overdue = new OverdueHeap(store);
  }

  get cursor(): number {
    return this.levels.cursor;
  }

  get bytes(): number {
    return this.levels.bytes + this.overdue.bytes;
  }

  /** Files record `s`, due at `dueMs` (already stored in the record). O(1); O(log m) if overdue. */
  insert(s: number, dueMs: number): void {
    if (!this.levels.place(s, dueMs)) this.overdue.push(s);
  }

  /** Takes record `s` out of the wheel. O(1); O(log m) if overdue. */
  unlink(s: number): void {
    if (this.store.i32[s * RECORD_WORDS + POS]! < 0) this.overdue.remove(s);
    else this.levels.unlink(s);
  }

  /**
   * Takes out the records due at or before `nowMs`, earliest first, at most `maxBatch`, writing them to
   * `slots` and their due times to `dues`; returns how many. Moves at most `cascadeBudget` entries
   * between levels, so it may stop short (see `TimingWheel.advance`).
   */
  collect(nowMs: number, maxBatch: number, slots: Int32Array, dues: Float64Array): number {
    let out = 0;
    // Overdue entries are all due before the cursor, hence before everything in the levels.
    const { overdue, store } = this;
    while (out < maxBatch && overdue.size > 0) {
      const s = overdue.peek();
      if (store.isDead(s)) {
        overdue.remove(s);
        store.releaseDead(s);
        continue;
      }
      const dueMs = store.f64[s * 2]!;
      if (dueMs > nowMs) break;
      overdue.remove(s);
      slots[out] = s;
      dues[out++] = dueMs;
    }
    const levels = this.levels;
    let budget = this.cascadeBudget;
    while (out < maxBatch) {
      // The first occupied bucket of each coarse level holds nothing due before its start L, and may be
      // split one level down once the cursor reaches A = L - T (the bucket before it).
      let lMin = Infinity;
      let lLevel = 0;
      let lBucket = 0;
      let aMin = Infinity;
      let aLevel = 0;
      let aBucket = 0;
      for (let j = levels.levelCount - 1; j >= 1; j--) {
        const x = levels.firstOccupied(j);
        if (x < 0) continue;
        const tick = levels.tickMs[j]!;
        const start = x * tick;
        if (start < lMin) {
          lMin = start;
          lLevel = j;
          lBucket = x;
        }
        if (start - tick < aMin) {
          aMin = start - tick;
          aLevel = j;
          aBucket = x;
        }
      }
      // (a) Level-0 entries due by now and before every coarse bucket are next in due order.
      out = this.collectLevel0(Math.min(nowMs, lMin - 1), out, maxBatch, slots, dues);
      if (out === maxBatch) break;
      if (lMin <= nowMs) {
        // (b) A coarse bucket that has started may hold the next entries: split it first.
        if (budget === 0) break;
        budget = this.split(lLevel, lBucket, budget);
      } else if (aMin <= nowMs) {
        // (c) Nothing else is due: spend what is left of the budget splitting buckets ahead of time.
        if (budget === 0) break;
        budget = this.split(aLevel, aBucket, budget);
      } else {
        // (d) Caught up: the cursor follows the clock (never into an occupied coarse bucket).
        const target = Math.min(nowMs + 1, lMin - 1);
        if (target > levels.cursor) levels.cursor = target;
        break;
      }
    }
    return out;
  }

  /**
   * The earliest time at which `collect` has work: the next due time when it is known exactly (level 0,
   * overdue heap), else the time from which a coarse bucket can be split. Infinity when empty.
   */
  nextEventMs(): number {
    let next = Infinity;
    if (this.overdue.size > 0) next = this.store.f64[this.overdue.peek() * 2]!;
    const levels = this.levels;
    const x0 = levels.firstOccupied(0);
    if (x0 >= 0 && x0 < next) next = x0;
    for (let j = 1; j < levels.levelCount; j++) {
      const x = levels.firstOccupied(j);
      if (x >= 0) next = Math.min(next, (x - 1) * levels.tickMs[j]!);
    }
    return next;
  }

  /** Collects level-0 buckets due at or before `limit`, earliest first, until `maxBatch`. */
  private collectLevel0(
    limit: number,
    out: number,
    maxBatch: number,
    slots: Int32Array,
    dues: Float64Array,
  ): number {
    const levels = this.levels;
    const { pool } = levels;
    const store = this.store;
    while (out < maxBatch) {
      const x = levels.firstOccupied(0);
      if (x < 0 || x > limit) break;
      levels.cursor = x;
      const b = x & levels.mask;
      const popped = out + pool.pop(b, slots, out, maxBatch - out);
      // Drop cancelled entries (marked dead, not yet unlinked); the loop pops again for their places.
      let end = out;
      for (let i = out; i < popped; i++) {
        const s = slots[i]!;
        if (store.isDead(s)) store.releaseDead(s);
        else slots[end++] = s;
      }
      dues.fill(x, out, end);
      out = end;
      if (pool.count[b] === 0) levels.markEmpty(b);
    }
    return out;
  }

  /**
   * Moves up to `budget` entries of level-j absolute bucket x one level (or more) down; returns the
   * budget left. The cursor first moves to the bucket before x (nothing is due in between, or the
   * caller would have collected it), which is what makes x fit in the finer level's window.
   */
  private split(j: number, x: number, budget: number): number {
    const { levels, moving, movingDue, store } = this;
    const from = (x - 1) * levels.tickMs[j]!;
    if (levels.cursor < from) levels.cursor = from;
    const b = j * levels.buckets + (x & levels.mask);
    while (budget > 0) {
      const k = levels.pool.pop(b, moving, 0, Math.min(budget, MOVE_CHUNK));
      if (k === 0) break;
      // Load all the due times first (independent cache misses overlap), then relink.
      const { f64 } = store;
      for (let i = 0; i < k; i++) movingDue[i] = f64[moving[i]! * 2]!;
      // A level-1 bucket lands in level 0: these entries are due within about a second.
      if (j === 1) this.sink ^= this.warm(moving, k);
      // Always lands on a finer level: dueMs ≥ x·T_j > cursor, and level j-1's window now covers x.
      // Cancelled entries (marked dead) are dropped here instead.
      for (let i = 0; i < k; i++) {
        const s = moving[i]!;
        if (store.isDead(s)) store.releaseDead(s);
        else levels.place(s, movingDue[i]!);
      }
      budget -= k;
    }
    if (levels.pool.count[b] === 0) levels.markEmpty(b);
    return budget;
  }
}
