import { BucketPool } from './bucket-pool';
import { type EntryStore, POS, RECORD_WORDS } from './entry-store';

const MAX_DUE = Number.MAX_SAFE_INTEGER;

/**
 * The buckets of every level, the wheel's cursor, and where an entry belongs.
 *
 * Level 0 has W = 2^bits buckets of 1 ms; level j >= 1 has W buckets of T_j = 2^((bits-1)·j) ms, i.e.
 * half a lower-level revolution per bucket. Bucket j·W + (x mod W) of the pool holds the entries of
 * level j's absolute bucket x (dueMs in [x·T_j, (x+1)·T_j)). One occupancy bit per bucket, and one
 * summary bit per occupancy word, find the next occupied bucket in a few word reads.
 *
 * Level j's window is the W absolute buckets starting at cur_j = floor(cursor / T_j); an entry is kept
 * at the lowest level whose window holds it. Because T_j is half of level j-1's span, a level-j bucket
 * fits one level down as soon as the cursor is in the bucket just before it; that is what lets the
 * wheel redistribute a coarse bucket ahead of time and in bounded slices.
 */
export class BucketLevels {
  readonly buckets: number;
  readonly mask: number;
  readonly maxLevels: number;
  /** Levels in use; the next one is created when an entry fits none of them. */
  levelCount = 1;
  /** T_j, and 1 / T_j (exact: powers of two). */
  readonly tickMs: Float64Array;
  private readonly perMs: Float64Array;
  private readonly occupied: Int32Array;
  private readonly wordsPerLevel: number;
  /** Bit w of level j's summary: occupancy word w of level j is not zero. */
  private readonly summary: Int32Array;
  private readonly summaryPerLevel: number;
  readonly pool: BucketPool;
  /** Every entry due before the cursor has left the wheel; every entry in the wheel is due at or after it. */
  cursor: number;

  constructor(
    readonly bits: number,
    startMs: number,
    private readonly store: EntryStore,
  ) {
    this.buckets = 2 ** bits;
    this.mask = this.buckets - 1;
    this.maxLevels = BucketLevels.levelsFor(bits);
    this.tickMs = new Float64Array(this.maxLevels);
    this.perMs = new Float64Array(this.maxLevels);
    for (let j = 0; j < this.maxLevels; j++) {
      this.tickMs[j] = 2 ** ((bits - 1) * j);
      this.perMs[j] = 2 ** -((bits - 1) * j);
    }
    this.wordsPerLevel = this.buckets / 32;
    this.occupied = new Int32Array(this.maxLevels * this.wordsPerLevel);
    this.summaryPerLevel = Math.max(1, this.wordsPerLevel / 32);
    this.summary = new Int32Array(this.maxLevels * this.summaryPerLevel);
    this.pool = new BucketPool(this.maxLevels * this.buckets, store);
    this.cursor = startMs;
  }

  /** Levels needed so that the top one holds any dueMs up to 2^53 from any cursor. */
  static levelsFor(bits: number): number {
    let levels = 1;
    while (MAX_DUE / 2 ** ((bits - 1) * (levels - 1)) > 2 ** bits - 2) levels++;
    return levels;
  }

  get bytes(): number {
    return this.occupied.byteLength + this.summary.byteLength + this.tickMs.byteLength * 2 + this.pool.bytes;
  }

  /** Absolute bucket number of the cursor at level j. */
  current(j: number): number {
    return Math.floor(this.cursor * this.perMs[j]!);
  }

  /**
   * Links record `s` (due `dueMs`) into the lowest level whose window holds it, creating levels as
   * needed. Returns false, linking nothing, when dueMs is before the cursor (the caller's overdue case).
   */
  place(s: number, dueMs: number): boolean {
    const cursor = this.cursor;
    if (dueMs < cursor) return false;
    const perMs = this.perMs;
    for (let j = 0; ; j++) {
      if (j === this.levelCount) this.levelCount++;
      const k = perMs[j]!;
      const x = Math.floor(dueMs * k);
      if (x - Math.floor(cursor * k) < this.buckets) {
        this.link(j * this.buckets + (x & this.mask), s);
        return true;
      }
    }
  }

  /** Adds record `s` to bucket `b` (level j, absolute bucket x: b = j·W + (x mod W)). */
  link(b: number, s: number): void {
    if (!this.pool.push(b, s)) return;
    const g = b >>> 5;
    const was = this.occupied[g]!;
    this.occupied[g] = was | (1 << (b & 31));
    if (was === 0) this.flipSummary(b);
  }

  /** Removes record `s` from its bucket: O(1). */
  unlink(s: number): void {
    const emptied = this.pool.remove(this.store.i32[s * RECORD_WORDS + POS]!);
    if (emptied >= 0) this.markEmpty(emptied);
  }

  markEmpty(b: number): void {
    const g = b >>> 5;
    const now = this.occupied[g]! & ~(1 << (b & 31));
    this.occupied[g] = now;
    if (now === 0) this.flipSummary(b);
  }

  /**
   * The first occupied absolute bucket of level j at or after the cursor's, or -1: the rest of the
   * cursor's occupancy word, else the next non-empty word found through the summary (wrapping once).
   */
  firstOccupied(j: number): number {
    const cur = this.current(j);
    const start = cur & this.mask;
    const words = this.wordsPerLevel;
    const base = j * words;
    let w = start >>> 5;
    let word = this.occupied[base + w]! & (-1 << (start & 31));
    if (word === 0) {
      // The next non-empty word after w; if that is w itself, its set bits are all below start.
      w = nextSetBit(this.summary, j * this.summaryPerLevel, words, (w + 1) & (words - 1));
      if (w < 0) return -1;
      word = this.occupied[base + w]!;
    }
    const index = (w << 5) | (31 - Math.clz32(word & -word));
    return cur + ((index - start) & this.mask);
  }

  /** Toggles the summary bit of bucket b's occupancy word (it just became empty or non-empty). */
  private flipSummary(b: number): void {
    const j = Math.floor(b / this.buckets);
    const w = (b & this.mask) >>> 5;
    const at = j * this.summaryPerLevel + (w >>> 5);
    this.summary[at] = this.summary[at]! ^ (1 << (w & 31));
  }
}

/**
 * The first set bit at or after `from` among the `n` bits (a power of two) starting at word `base` of
 * `bits`, wrapping around once; -1 if none is set.
 */
function nextSetBit(bits: Int32Array, base: number, n: number, from: number): number {
  if (n <= 32) {
    const word = bits[base]!;
    if (word === 0) return -1;
    const after = word & (-1 << from);
    const x = after !== 0 ? after : word;
    return 31 - Math.clz32(x & -x);
  }
  const words = n >>> 5;
  let w = from >>> 5;
  let word = bits[base + w]! & (-1 << (from & 31));
  for (let k = 0; word === 0; k++) {
    if (k === words) return -1;
    w = (w + 1) & (words - 1);
    word = bits[base + w]!;
  }
  return (w << 5) | (31 - Math.clz32(word & -word));
}
