import { EntryStore } from './entry-store';
import { ExpiredBatch, type WheelEntry } from './expired-batch';
import { HierarchicalWheel } from './hierarchical-wheel';
import { BATCH, IdIndex } from './id-index';
import { TimingWheelError, WheelErrorCode } from './wheel-error';
import { type ResolvedWheelOptions, type TimingWheelOptions, resolveWheelOptions } from './wheel-options';

/** Names one pending entry; goes stale (and is then rejected) once the entry leaves the wheel. */
export type WheelHandle = number & { readonly __wheelHandle: unique symbol };

/** Sizes for capacity planning and the benchmark. */
export interface WheelStats {
  /** Pending entries. */
  readonly size: number;
  /** Pending entries that were added already due (they leave on the next `advance`). */
  readonly overdue: number;
  /** Levels created so far. */
  readonly levels: number;
  /** Entries the record pool holds before it grows. */
  readonly capacity: number;
  /** Bytes of the wheel itself: the entry records, the buckets (blocks, counts, bitmaps), the overdue heap. */
  readonly wheelBytes: number;
  /** Bytes of the job-id index: the per-entry id slots, the hash table and the long-id arena. */
  readonly idIndexBytes: number;
}

/** Entries finished (or loaded) per group: few enough that the group's pages stay in the TLB. */
const GROUP = 128;

function invalidDue(dueMs: unknown): TimingWheelError {
  return new TimingWheelError(
    WheelErrorCode.InvalidDue,
    `dueMs must be an integer number of ms since the epoch in [0, 2^53 - 1], got ${String(dueMs)}`,
  );
}

function invalidTag(tag: unknown): TimingWheelError {
  return new TimingWheelError(
    WheelErrorCode.InvalidTag,
    `tag must be a 32-bit signed integer, got ${String(tag)}`,
  );
}

/**
 * The scheduler's in-memory index of what is due next: a hierarchical timing wheel (the design of
 * Kafka's purgatory `TimingWheel`, Netty's `HashedWheelTimer` lineage) keyed by job id.
 *
 * **Pure.** It never reads a clock and never starts a timer: the caller passes `nowMs` to `advance`,
 * and a small driver owns the clock, sleeping until `nextDueMs()`.
 *
 * **Buckets per level.** Every level has W = 2^wheelBits buckets. Level 0 has 1 ms buckets (the
 * resolution of dueMs, so a level-0 bucket holds a single due time and needs no sort); each higher
 * level's bucket spans half a revolution of the level below. With the default wheelBits = 10
 * (W = 1,024):
 *
 *     level  bucket (T)        window (W·T)    holds
 *       0    1 ms              1.024 s         dueMs - cursor < 1,024
 *       1    512 ms            8.7 min         floor(dueMs / 512) - floor(cursor / 512) < 1,024
 *       2    262.144 s         74.6 h          ... / 2^18
 *       3    37.3 h            4.4 years       ... / 2^27
 *       4, 5 (2^36, 2^45 ms)   up to 2^53 ms   created only when an entry needs them
 *
 * So a timer due in a day waits at level 2 and moves down twice (at most 2 moves per timer while it
 * is due within 74.6 h). wheelBits = 14 would move it once, but spreads adds and cancels over 16 times
 * more buckets, which costs more in cache misses than it saves.
 *
 * An entry goes to the lowest level whose window holds it. Worked example, cursor = 0:
 * - `add('a', 700)` → level 0, bucket 700.
 * - `add('b', 5_000)` → too far for level 0 (5,000 ≥ 1,024); level 1, absolute bucket
 *   floor(5,000 / 512) = 9, which holds dueMs 4,608..5,119.
 * - `add('c', 3_600_000)` (1 h) → level 1 is too short (7,031 ≥ 1,024); level 2, bucket 13
 *   (3,407,872..3,670,015).
 * - `advance(1_000, 100)` returns `a`; the cursor moves to 1,001. `nextDueMs()` is now 4,096: level-1
 *   bucket 9 is not due before 4,608, but from 4,096 (one level-1 bucket earlier) it fits in level 0's
 *   window, and the wheel wants to split it then, ahead of time.
 * - `advance(4_096, 100)` moves `b` down to level 0 (bucket 5,000 mod 1,024 = 904) and returns nothing;
 *   `nextDueMs()` is now exactly 5,000, and `advance(5_000, 100)` returns `b`. `c` takes the same path:
 *   level 2 → level 1 from 3,145,728 → level 0 from 3,599,360 → out at 3,600,000.
 *
 * **Order and timeliness.** `advance(nowMs, maxBatch)` returns entries due at or before nowMs, in due
 * order (ties in no promised order), never one due after nowMs. Each call returns the earliest pending
 * ones, at most maxBatch; the rest wait for the next call. Entries added with dueMs already passed
 * come out first on the next call. The structure adds no lateness of its own (the tick is 1 ms and a
 * coarse bucket is split before its first millisecond), provided the driver calls `advance` when
 * `nextDueMs()` says; when a call had to stop early (maxBatch, or its cascade budget), `nextDueMs()`
 * is ≤ nowMs: call again (after yielding to the event loop).
 *
 * **Complexity.** `add`, `cancel`, `reschedule` and their by-id forms: O(1) amortised (plus hashing
 * the id); `cancelManyById`, O(1) per id with its lookups in flight together; an entry added already
 * overdue sits in a small binary heap, O(log m) for those. `advance`:
 * O(k + c + s·levels·W/32) for k ≤ maxBatch entries returned, c ≤ `cascadeBudget` entries moved down a
 * level and s ≤ k + c + 1 bucket searches; each entry moves down at most levels - 1 times in its
 * life. `nextDueMs()`: O(levels·W/32) word reads, and a lower bound of the next due time, exact when
 * the next event is a level-0 bucket or an overdue entry. `load`: O(n).
 *
 * **Lazy cancel by id.** `cancelById` finds the id (one table cell and the id's bytes: the dominant
 * cost at scale is those two cache and TLB misses), forgets it, and only marks the entry's record in a
 * 1-bit-per-record bitmap that stays in cache: it reads neither the record nor the bucket. The entry
 * leaves the wheel at once for every caller (`size`, `has`, handles, `advance` never return it); its
 * record and bucket position are freed when the wheel next reads that bucket (a split or a level-0
 * collect) or heap top. At most live / 4 + 1,024 such records wait at any time; past that, cancels
 * unlink at once (as `cancel(handle)`, `reschedule` and `load`'s undo always do). Meanwhile a waiting
 * record can make `nextDueMs()` earlier than the next due entry (still a lower bound).
 *
 * **Memory.** Per entry: a 16-byte record (due time, bucket position, generation) in one ArrayBuffer
 * with a free list through it, the caller's 4-byte tag beside it, its number in a bucket (buckets are chains of 16-entry blocks, read as
 * contiguous memory: no pointer chasing), and for the id index a 48-byte slot (hash, length, UTF-8
 * bytes inline up to 40) plus an open-addressing table of (hash, record) int32 pairs, and 1 bit
 * (cancelled, waiting to leave its bucket). Cancelled records that wait add at most a quarter (plus
 * 1,024) to the records and buckets in use (see above). No per-timer JS object, no string-keyed `Map`
 * (which would stop at 2^24 entries). Pools double when full. At most 2^26 - 1 entries.
 *
 * **Async contract.** Not thread-safe and not re-entrant: one owner calls it, every method is
 * synchronous and runs to completion, and nothing happens between calls. The `ExpiredBatch` returned by
 * `advance` is reused by the next call. nowMs should not go backwards; if it does, nothing not yet due
 * is returned.
 */
export class TimingWheel {
  readonly options: ResolvedWheelOptions;
  private readonly store: EntryStore;
  private readonly wheel: HierarchicalWheel;
  private readonly ids: IdIndex;
  private readonly batch = new ExpiredBatch();
  /** Records collected by the current `advance`, in due order (their due times are in `batch.dueMs`). */
  private gathered = new Int32Array(GROUP);
  /** Per id of the current `cancelManyById` group: 1 when it is in the batch scratch. */
  private readonly encodedInBatch = new Uint8Array(BATCH);
  /** Keeps the prefetch loads observable so that the compiler cannot drop them. */
  private sink = 0;

  constructor(options: TimingWheelOptions) {
    this.options = resolveWheelOptions(options);
    const { wheelBits, startMs, initialCapacity, cascadeBudget } = this.options;
    this.store = new EntryStore(initialCapacity);
    const ids = new IdIndex(this.store, initialCapacity);
    this.ids = ids;
    this.wheel = new HierarchicalWheel(wheelBits, startMs, this.store, cascadeBudget, (records, count) =>
      ids.prefetch(records, 0, count),
    );
  }

  /** Pending entries. */
  get size(): number {
    return this.store.live;
  }

  /** The wheel's time: every entry due before it has been returned by `advance`. */
  get currentMs(): number {
    return this.wheel.cursor;
  }

  /**
   * Adds job `id`, due at `dueMs`, with an int32 `tag` of the caller's (handed back by `advance`).
   * Throws SCHED_E_WHEEL_INVALID_DUE, SCHED_E_WHEEL_INVALID_ID, SCHED_E_WHEEL_INVALID_TAG,
   * SCHED_E_WHEEL_DUPLICATE_ID (the id is pending: use `rescheduleById`) or SCHED_E_WHEEL_CAPACITY.
   */
  add(id: string, dueMs: number, tag = 0): WheelHandle {
    if (!Number.isSafeInteger(dueMs) || dueMs < 0) throw invalidDue(dueMs);
    if ((tag | 0) !== tag) throw invalidTag(tag);
    const { ids, store } = this;
    ids.ensureRoom();
    const s = store.alloc();
    try {
      ids.encode(s, id);
    } catch (err) {
      store.release(s);
      throw err;
    }
    const cell = ids.probe(s);
    if (ids.found) {
      store.release(s);
      throw new TimingWheelError(WheelErrorCode.DuplicateId, `job ${id} is already pending`);
    }
    ids.insert(cell, s);
    store.f64[s * 2] = dueMs;
    store.tags[s] = tag;
    this.wheel.insert(s, dueMs);
    return store.handleOf(s) as WheelHandle;
  }

  /**
   * Adds many entries at once: the way to rebuild from the database. Sizes every pool once, and works in
   * groups so that the id-table lookups of a group are in flight together. All or nothing: on an invalid
   * or duplicate entry it throws (as `add`) and leaves the wheel as it was.
   */
  load(entries: readonly WheelEntry[]): void {
    for (const { dueMs, tag } of entries) {
      if (!Number.isSafeInteger(dueMs) || dueMs < 0) throw invalidDue(dueMs);
      if (tag !== undefined && (tag | 0) !== tag) throw invalidTag(tag);
    }
    const { store, ids, wheel } = this;
    store.reserve(entries.length);
    ids.reserve(entries.length);
    const group = new Int32Array(GROUP);
    let filed = 0;
    let encoded = 0;
    try {
      for (let from = 0; from < entries.length; from += GROUP) {
        const to = Math.min(entries.length, from + GROUP);
        // 1. Copy and hash each id into a fresh record (no random access: fresh records are sequential).
        for (let i = from; i < to; i++) {
          const s = store.alloc();
          group[i - from] = s;
          encoded = i + 1;
          ids.encode(s, entries[i]!.id);
        }
        // 2. Touch the group's table cells together, then 3. file the entries one by one.
        this.sink ^= ids.prefetchHomes(group, to - from);
        for (let i = from; i < to; i++) {
          const s = group[i - from]!;
          const cell = ids.probe(s);
          if (ids.found)
            throw new TimingWheelError(
              WheelErrorCode.DuplicateId,
              `job ${entries[i]!.id} is already pending`,
            );
          ids.insert(cell, s);
          const dueMs = entries[i]!.dueMs;
          store.f64[s * 2] = dueMs;
          store.tags[s] = entries[i]!.tag ?? 0;
          wheel.insert(s, dueMs);
          filed = i + 1;
        }
      }
    } catch (err) {
      for (let i = filed; i < encoded; i++) store.release(group[i % GROUP]!);
      // Unlink at once (not lazily, as cancelById may): the wheel is left exactly as it was.
      for (let i = 0; i < filed; i++) this.remove(ids.find(entries[i]!.id));
      throw err;
    }
  }

  /** Removes the entry; false (and no effect) when the handle is stale: expired, cancelled, or not ours. */
  cancel(handle: WheelHandle): boolean {
    const s = this.store.slotOf(handle);
    if (s < 0) return false;
    this.remove(s);
    return true;
  }

  /** Removes the pending entry of job `id`; false when there is none. Throws SCHED_E_WHEEL_INVALID_ID. */
  cancelById(id: string): boolean {
    const ids = this.ids;
    const s = ids.find(id);
    if (s < 0) return false;
    ids.removeCell(ids.foundCell);
    this.cancelFound(s);
    return true;
  }

  /**
   * Removes the pending entries of jobs `ids`, as `cancelById` on each in turn, and returns how many
   * there were. Faster than that loop at scale: the ids go in groups of 128 whose table cells, then id
   * slots, are fetched together, so that their cache misses overlap instead of queueing one by one.
   * Throws SCHED_E_WHEEL_INVALID_ID on an invalid id, having cancelled the ones before it.
   */
  cancelManyById(ids: readonly string[]): number {
    const index = this.ids;
    const encoded = this.encodedInBatch;
    let cancelled = 0;
    for (let from = 0; from < ids.length; from += BATCH) {
      const n = Math.min(BATCH, ids.length - from);
      // 1. Copy and hash each id into the batch scratch (no random access), 2. touch their table cells,
      // then the id slots those lead to, all together, 3. cancel one by one, from cache. Ids off the
      // fast path (long, not ASCII, invalid) go through `cancelById` instead, in their turn.
      for (let k = 0; k < n; k++) encoded[k] = index.encodeBatch(k, ids[from + k]!) ? 1 : 0;
      this.sink ^= index.prefetchBatch(encoded, n);
      for (let k = 0; k < n; k++) {
        if (encoded[k] === 0) {
          if (this.cancelById(ids[from + k]!)) cancelled++;
          continue;
        }
        const s = index.findBatch(k);
        if (s < 0) continue;
        index.removeCell(index.foundCell);
        this.cancelFound(s);
        cancelled++;
      }
    }
    return cancelled;
  }

  /** Moves the entry to `dueMs`; the handle stays valid. False when the handle is stale. */
  reschedule(handle: WheelHandle, dueMs: number): boolean {
    if (!Number.isSafeInteger(dueMs) || dueMs < 0) throw invalidDue(dueMs);
    const s = this.store.slotOf(handle);
    if (s < 0) return false;
    this.move(s, dueMs);
    return true;
  }

  /**
   * Moves the pending entry of job `id` to `dueMs`, and sets its tag when `tag` is given (it keeps
   * its tag otherwise); false when there is none.
   */
  rescheduleById(id: string, dueMs: number, tag?: number): boolean {
    if (!Number.isSafeInteger(dueMs) || dueMs < 0) throw invalidDue(dueMs);
    if (tag !== undefined && (tag | 0) !== tag) throw invalidTag(tag);
    const s = this.ids.find(id);
    if (s < 0) return false;
    if (tag !== undefined) this.store.tags[s] = tag;
    this.move(s, dueMs);
    return true;
  }

  /** Tag of job `id`'s pending entry, or undefined when it is not pending. */
  tagOf(id: string): number | undefined {
    const s = this.ids.find(id);
    return s < 0 ? undefined : this.store.tags[s];
  }

  /** Whether job `id` is pending. */
  has(id: string): boolean {
    return this.ids.find(id) >= 0;
  }

  /** Due time of job `id`, or undefined when it is not pending. */
  dueMsOf(id: string): number | undefined {
    const s = this.ids.find(id);
    return s < 0 ? undefined : this.store.f64[s * 2];
  }

  /** Handle of job `id`'s pending entry, or undefined. */
  handleOf(id: string): WheelHandle | undefined {
    const s = this.ids.find(id);
    return s < 0 ? undefined : (this.store.handleOf(s) as WheelHandle);
  }

  /**
   * Returns the entries due at or before `nowMs`, earliest first, at most `maxBatch` of them (the rest
   * wait for the next call), and removes them. Each call also moves at most `cascadeBudget` entries
   * from coarse buckets to finer ones; a call that runs out of budget may return fewer than maxBatch,
   * even none, with `nextDueMs()` ≤ nowMs telling the driver to call again. The returned batch is reused
   * by the next call. Throws SCHED_E_WHEEL_INVALID_NOW, SCHED_E_WHEEL_INVALID_BATCH.
   */
  advance(nowMs: number, maxBatch: number): ExpiredBatch {
    if (!Number.isSafeInteger(nowMs) || nowMs < 0) {
      throw new TimingWheelError(
        WheelErrorCode.InvalidNow,
        `nowMs must be an integer in [0, 2^53 - 1], got ${String(nowMs)}`,
      );
    }
    if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > 2 ** 24) {
      throw new TimingWheelError(
        WheelErrorCode.InvalidBatch,
        `maxBatch must be an integer in [1, 2^24], got ${String(maxBatch)}`,
      );
    }
    const batch = this.batch;
    batch.prepare(maxBatch);
    if (this.gathered.length < maxBatch) this.gathered = new Int32Array(maxBatch);
    const n = this.wheel.collect(nowMs, maxBatch, this.gathered, batch.dueMs);
    this.finishBatch(n);
    batch.seal(n);
    return batch;
  }

  /**
   * A time at or before the next due entry, for the driver to sleep until (then call `advance`):
   * exact when the next event is a level-0 bucket or an overdue entry; otherwise the time from which a
   * coarse bucket can be split ahead of its due times. A cancelled entry that still waits in its bucket
   * (see "Lazy cancel by id") can make it earlier: `advance` then drops it, and the next value is later.
   * A value ≤ now means "call advance now".
   * Undefined when the wheel is empty. O(levels · W / 32).
   */
  nextDueMs(): number | undefined {
    if (this.store.live === 0) return undefined;
    const next = this.wheel.nextEventMs();
    return next === Infinity ? undefined : next;
  }

  stats(): WheelStats {
    const { store, wheel, ids } = this;
    return {
      size: store.live,
      overdue: wheel.overdue.countLive(),
      levels: wheel.levels.levelCount,
      capacity: store.capacity - 1,
      wheelBytes: store.bytes + wheel.bytes,
      idIndexBytes: ids.bytes,
    };
  }

  private move(s: number, dueMs: number): void {
    this.wheel.unlink(s);
    this.store.f64[s * 2] = dueMs;
    this.wheel.insert(s, dueMs);
  }

  private remove(s: number): void {
    this.ids.detach(s);
    this.unlinkAndRelease(s);
  }

  /** Takes out record `s`, whose id has just left the index (a cancel by id). */
  private cancelFound(s: number): void {
    const store = this.store;
    // Lazily: the record is only marked (in a bitmap that stays in cache), and leaves its bucket when
    // the wheel next reads that bucket; so a cancel reads no record and no bucket.
    if (store.canDefer()) store.markDead(s);
    else this.unlinkAndRelease(s);
  }

  private unlinkAndRelease(s: number): void {
    this.wheel.unlink(s);
    this.store.release(s);
  }

  /** Fills the batch's ids from the gathered records and frees them. */
  private finishBatch(n: number): void {
    const { gathered, ids, store } = this;
    const names = this.batch.ids;
    const tags = this.batch.tags;
    for (let from = 0; from < n; from += GROUP) {
      const to = Math.min(n, from + GROUP);
      // Start the group's id-area, table and record loads first, so that their cache and TLB misses
      // overlap instead of queueing one by one.
      this.sink ^= ids.prefetch(gathered, from, to) ^ store.prefetch(gathered, from, to);
      for (let i = from; i < to; i++) {
        const s = gathered[i]!;
        names[i] = ids.idOf(s);
        tags[i] = store.tags[s]!;
        ids.detach(s);
        store.release(s);
      }
    }
  }
}
