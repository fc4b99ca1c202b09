import { TimingWheelError, WheelErrorCode } from './wheel-error';

/*
 * One 16-byte record per entry, all in one ArrayBuffer: nothing per timer for the garbage collector to
 * trace. Record s is 32-bit words [4s, 4s + 4):
 *
 *   words 0-1  dueMs  float64 (index 2s of the Float64Array view)
 *   word 2     pos    int32   >= 0: position in the bucket pool; < 0: -1 - index in the overdue heap;
 *                             on a free record: the next free record (-1 ends the list)
 *   word 3     gen    uint32  generation (low 27 bits) + LIVE flag (bit 31); the generation is bumped
 *                             on release so that stale handles are rejected
 *
 * The job id of record s lives at the same index in the id index's own per-slot area. Record 0 is never
 * handed out (the id index uses its area as scratch), so no handle is 0.
 *
 * A caller's int32 tag per record (`tags[s]`: say, a tenant and a priority class) sits in its own
 * array beside the records, 4 bytes a record; the wheel hands it back with each expired entry.
 *
 * Besides, one bit per record marks an entry cancelled by id but not yet unlinked from its bucket (or the
 * overdue heap): it is no longer live (not in `live`, its handles are stale), and the wheel frees it with
 * `releaseDead` when it next reads it there. The bitmap is 1/128 of the records: it stays in cache.
 */
export const RECORD_WORDS = 4;
export const RECORD_BYTES = 16;
export const POS = 2;
export const GEN = 3;

const SLOT_BITS = 26;
const SLOT_SPACE = 2 ** SLOT_BITS;
const SLOT_MASK = SLOT_SPACE - 1;
const GEN_MASK = 2 ** 27 - 1;
const LIVE = 2 ** 31;
/** Most entries a wheel holds (the id area must stay under 4 GiB). */
export const MAX_ENTRIES = SLOT_SPACE - 1;

/** Growable pool of fixed-size records with a free list threaded through the `pos` word. */
export class EntryStore {
  f64!: Float64Array;
  i32!: Int32Array;
  u32!: Uint32Array;
  /** The caller's tag of record s. */
  tags!: Int32Array;
  /** Records allocated. */
  capacity = 0;
  /** Records ever handed out (high-water mark), record 0 included. */
  top = 1;
  /** Records of pending entries. */
  live = 0;
  /**
   * Records of cancelled entries that still wait in their bucket (or the overdue heap) to be dropped
   * when the wheel next reads it: a cancel by id then never touches the record or the bucket.
   */
  dead = 0;
  /** Bit s: record s is such a cancelled entry. 1 bit per record: stays in cache. */
  private deadBits!: Int32Array;
  private freeHead = -1;

  constructor(initialCapacity: number) {
    this.resize(Math.max(initialCapacity + 1, 16));
  }

  /** A record for a new entry; O(1) amortised (the pool doubles when full). */
  alloc(): number {
    let s = this.freeHead;
    if (s >= 0) {
      this.freeHead = this.i32[s * RECORD_WORDS + POS]!;
    } else {
      if (this.top === this.capacity) this.grow(this.top + 1);
      s = this.top++;
    }
    this.u32[s * RECORD_WORDS + GEN] = this.u32[s * RECORD_WORDS + GEN]! + LIVE;
    this.live++;
    return s;
  }

  /** Returns a record to the free list and invalidates every handle to it. */
  release(s: number): void {
    const w = s * RECORD_WORDS;
    this.u32[w + GEN] = (this.u32[w + GEN]! + 1) & GEN_MASK;
    this.i32[w + POS] = this.freeHead;
    this.freeHead = s;
    this.live--;
  }

  /** Whether a cancel may leave a record behind: at most live / 4 + 1,024 of them wait at any time. */
  canDefer(): boolean {
    return this.dead < (this.live >> 2) + 1024;
  }

  /** Marks live record s cancelled, without reading it: handles to it are stale from now on. */
  markDead(s: number): void {
    this.deadBits[s >>> 5] = this.deadBits[s >>> 5]! | (1 << (s & 31));
    this.live--;
    this.dead++;
  }

  isDead(s: number): boolean {
    return (this.deadBits[s >>> 5]! & (1 << (s & 31))) !== 0;
  }

  /** Frees a record marked dead (the wheel has just dropped it from its bucket or the heap). */
  releaseDead(s: number): void {
    this.deadBits[s >>> 5] = this.deadBits[s >>> 5]! & ~(1 << (s & 31));
    this.dead--;
    this.live++;
    this.release(s);
  }

  /** Makes room for `extra` more entries in one step (bulk load). */
  reserve(extra: number): void {
    if (this.top + extra > this.capacity) this.grow(this.top + extra);
  }

  /** Touches the records `slots[from..to)` so that their cache misses overlap; returns a value to keep. */
  prefetch(slots: Int32Array, from: number, to: number): number {
    let sink = 0;
    for (let i = from; i < to; i++) sink ^= this.i32[slots[i]! * RECORD_WORDS + GEN]!;
    return sink;
  }

  handleOf(s: number): number {
    return (this.u32[s * RECORD_WORDS + GEN]! - LIVE) * SLOT_SPACE + s;
  }

  /** The record a handle names, or -1 when it is not a live entry's (stale, forged, not a number). */
  slotOf(handle: number): number {
    const s = handle & SLOT_MASK;
    const gen = Math.floor(handle / SLOT_SPACE);
    if (gen * SLOT_SPACE + s !== handle || s < 1 || s >= this.top) return -1;
    return this.u32[s * RECORD_WORDS + GEN] === gen + LIVE && !this.isDead(s) ? s : -1;
  }

  get bytes(): number {
    return this.capacity * RECORD_BYTES + this.tags.byteLength + this.deadBits.byteLength;
  }

  private grow(needed: number): void {
    if (needed > SLOT_SPACE) {
      throw new TimingWheelError(
        WheelErrorCode.Capacity,
        `a timing wheel holds at most ${MAX_ENTRIES} entries`,
      );
    }
    this.resize(Math.min(SLOT_SPACE, Math.max(needed, this.capacity * 2)));
  }

  private resize(capacity: number): void {
    const buffer = new ArrayBuffer(capacity * RECORD_BYTES);
    if (this.capacity > 0) {
      new Uint8Array(buffer).set(new Uint8Array(this.f64.buffer, 0, this.top * RECORD_BYTES));
    }
    const tags = new Int32Array(capacity);
    if (this.capacity > 0) tags.set(this.tags.subarray(0, this.top));
    this.tags = tags;
    const bits = new Int32Array((capacity + 31) >>> 5);
    if (this.capacity > 0) bits.set(this.deadBits);
    this.deadBits = bits;
    this.f64 = new Float64Array(buffer);
    this.i32 = new Int32Array(buffer);
    this.u32 = new Uint32Array(buffer);
    this.capacity = capacity;
  }
}
