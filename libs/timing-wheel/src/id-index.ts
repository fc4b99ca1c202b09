import { Buffer } from 'node:buffer';
import type { EntryStore } from './entry-store';
import { encodeAscii, hashBytes, isWellFormed } from './id-bytes';
import { TimingWheelError, WheelErrorCode } from './wheel-error';

/*
 * Per-slot id area: 48 bytes for slot s at byte 48s (12 words):
 *
 *   word 0     hash of the id's UTF-8 bytes (int32)
 *   word 1     byte length (low 16 bits) | flags << 16
 *   bytes 8-47 the id's UTF-8 bytes, zero-padded to a word boundary, when it has at most 40 bytes;
 *              else word 2 = offset and word 3 = capacity of the slot's region in the overflow arena
 *
 * The area is indexed like the entry records, so an entry's id is found without reading its record:
 * the two loads can be in flight together.
 */
const STRIDE = 48;
const WORDS = STRIDE / 4;
const INLINE = 40;
const NON_ASCII = 1 << 16;
const OVERFLOW = 1 << 17;
const LENGTH = 0xffff;
const MAX_ID_BYTES = 0xffff;
const MAX_LOAD = 0.75;
const MAX_ARENA_BYTES = 2 ** 32 - 1;
/** Ids per batched lookup (`encodeBatch` / `findBatch`). */
export const BATCH = 128;
/** The fast path stores 4 chars per int32 write, which lays them out as bytes only on little-endian. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Job id → entry, without one string-keyed `Map` entry (and one GC-traced string) per job: ids are
 * stored as UTF-8 in the per-slot area above (long ones in an overflow arena), and found through an
 * open-addressing table with linear probing over an Int32Array of (hash, slot + 1) pairs: a power of
 * two in size, at most 3/4 full, backward-shift deletion (no tombstones). A hit is confirmed by
 * comparing the id bytes, so 32-bit hash collisions are harmless. Slot 0 is scratch for lookups.
 *
 * Single owner, synchronous, not thread-safe (see `TimingWheel`).
 */
export class IdIndex {
  private table: Int32Array;
  private mask: number;
  private count = 0;
  private area!: Buffer;
  private words!: Int32Array;
  private slots = 0;
  private arena = Buffer.alloc(0);
  private arenaTop = 0;
  private deadBytes = 0;
  /** Scratch for batched lookups: `BATCH` id slots laid out as the area's, outside it. */
  private readonly batchWords = new Int32Array(BATCH * WORDS);
  /** Set by probe(): whether the returned cell holds the id. */
  found = false;
  /** Set by find(): the cell holding the id it found. */
  foundCell = 0;

  constructor(
    private readonly store: EntryStore,
    initialEntries: number,
  ) {
    const cells = tableSizeFor(initialEntries);
    this.table = new Int32Array(cells * 2);
    this.mask = cells - 1;
    this.resizeArea(store.capacity);
  }

  get size(): number {
    return this.count;
  }

  get bytes(): number {
    return this.table.byteLength + this.area.byteLength + this.arena.byteLength;
  }

  /** The slot of a pending id, or -1. Throws INVALID_ID. */
  find(id: string): number {
    this.encode(0, id);
    const cell = this.probe(0);
    this.foundCell = cell;
    return this.found ? this.table[cell * 2 + 1]! - 1 : -1;
  }

  /**
   * Writes `id` into slot `s`'s area and returns its hash. Throws INVALID_ID (the slot's previous id
   * bytes may then be partly overwritten: only use it on a slot being allocated or on scratch slot 0).
   */
  encode(s: number, id: string): number {
    if (s >= this.slots) this.resizeArea(this.store.capacity);
    const n = typeof id === 'string' ? id.length : 0;
    const w = s * WORDS;
    const words = this.words;
    if (
      n === 0 ||
      n > INLINE ||
      (words[w + 1]! & OVERFLOW) !== 0 ||
      !LITTLE_ENDIAN ||
      !encodeAscii(words, w, id, n)
    )
      return this.encodeSlow(s, id);
    return words[w]!;
  }

  /**
   * Looks for an id equal to slot `target`'s (just encoded): returns the cell holding it (`found`
   * true) or the empty cell where it belongs (`found` false; valid until the table next changes).
   */
  probe(target: number): number {
    const t = this.table;
    const mask = this.mask;
    const h = this.words[target * WORDS]!;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = t[i * 2 + 1]!;
      if (v === 0) {
        this.found = false;
        return i;
      }
      if (t[i * 2] === h && this.equal(v - 1, target)) {
        this.found = true;
        return i;
      }
    }
  }

  /**
   * Writes `id` into entry `k` of the batch scratch (room for `BATCH` ids, apart from the slots) when it
   * takes the fast path (1 to 40 ASCII characters); false otherwise, and then the caller uses `find`
   * (which also validates the id).
   */
  encodeBatch(k: number, id: string): boolean {
    const n = typeof id === 'string' ? id.length : 0;
    return n > 0 && n <= INLINE && LITTLE_ENDIAN && encodeAscii(this.batchWords, k * WORDS, id, n);
  }

  /**
   * Touches, for the batch entries `k` in [0, n) with `encoded[k]` set, their home table cells (all
   * together), then the id slot named by the first cell of each probe run whose hash matches: the loads
   * `findBatch` needs, issued so that their cache misses overlap. Returns a value to keep.
   */
  prefetchBatch(encoded: Uint8Array, n: number): number {
    const t = this.table;
    const mask = this.mask;
    const batch = this.batchWords;
    let sink = 0;
    for (let k = 0; k < n; k++) if (encoded[k] === 1) sink ^= t[(batch[k * WORDS]! & mask) * 2 + 1]!;
    const words = this.words;
    for (let k = 0; k < n; k++) {
      if (encoded[k] !== 1) continue;
      const h = batch[k * WORDS]!;
      for (let i = h & mask; ; i = (i + 1) & mask) {
        const v = t[i * 2 + 1]!;
        if (v === 0) break;
        if (t[i * 2] === h) {
          const w = (v - 1) * WORDS;
          sink ^= words[w + 1]! ^ words[w + WORDS - 1]!;
          break;
        }
      }
    }
    return sink;
  }

  /** As `find`, for batch entry `k` (encoded by `encodeBatch`): the slot holding its id, or -1. */
  findBatch(k: number): number {
    const t = this.table;
    const mask = this.mask;
    const batch = this.batchWords;
    const wb = k * WORDS;
    const h = batch[wb]!;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = t[i * 2 + 1]!;
      if (v === 0) return -1;
      if (t[i * 2] === h && this.equalBatch(v - 1, wb)) {
        this.foundCell = i;
        return v - 1;
      }
    }
  }

  /** Room for one more id; call before `probe` on the insert path (growing moves every cell). */
  ensureRoom(): void {
    if (this.count + 1 > (this.mask + 1) * MAX_LOAD) this.rehash(tableSizeFor(this.count + 1));
  }

  /** Files slot `s` (encoded) in the empty cell `probe` returned. */
  insert(cell: number, s: number): void {
    this.table[cell * 2] = this.words[s * WORDS]!;
    this.table[cell * 2 + 1] = s + 1;
    this.count++;
  }

  /** Forgets the id of slot `s` (which must be filed). */
  detach(s: number): void {
    const t = this.table;
    const mask = this.mask;
    let hole = this.words[s * WORDS]! & mask;
    for (let v = t[hole * 2 + 1]; v !== s + 1; v = t[hole * 2 + 1]) {
      if (v === 0) throw new Error(`timing wheel id index: slot ${s} is not filed (internal error)`);
      hole = (hole + 1) & mask;
    }
    this.removeCell(hole);
  }

  /** Empties table cell `hole` (in use): what `detach` does once it has found the cell. */
  removeCell(hole: number): void {
    const t = this.table;
    const mask = this.mask;
    // Backward-shift deletion: pull later members of the probe run into the hole unless that would put
    // them before their home cell.
    for (let j = (hole + 1) & mask; ; j = (j + 1) & mask) {
      const v = t[j * 2 + 1]!;
      if (v === 0) break;
      const h = t[j * 2]!;
      if (((j - (h & mask)) & mask) >= ((j - hole) & mask)) {
        t[hole * 2] = h;
        t[hole * 2 + 1] = v;
        hole = j;
      }
    }
    t[hole * 2] = 0;
    t[hole * 2 + 1] = 0;
    this.count--;
  }

  /** The id of slot `s`. */
  idOf(s: number): string {
    const info = this.words[s * WORDS + 1]!;
    const len = info & LENGTH;
    const encoding = (info & NON_ASCII) === 0 ? 'latin1' : 'utf8';
    if ((info & OVERFLOW) === 0) return this.area.toString(encoding, s * STRIDE + 8, s * STRIDE + 8 + len);
    const offset = this.words[s * WORDS + 2]!;
    return this.arena.toString(encoding, offset, offset + len);
  }

  /**
   * Starts the memory loads that `idOf(s)` and `detach(s)` will need for each of `slots[from..to)` (id
   * area: both cache lines a 48-byte slot may straddle; then the table cell) in two tight loops, so that
   * the cache misses overlap instead of queueing one by one.
   */
  prefetch(slots: Int32Array, from: number, to: number): number {
    const words = this.words;
    const t = this.table;
    const mask = this.mask;
    let sink = 0;
    for (let i = from; i < to; i++) {
      const w = slots[i]! * WORDS;
      sink ^= words[w]! ^ words[w + WORDS - 1]!;
    }
    for (let i = from; i < to; i++) sink ^= t[(words[slots[i]! * WORDS]! & mask) * 2 + 1]!;
    return sink;
  }

  /** Touches the home table cells of the (encoded) slots `slots[0..n)`; returns a value to keep. */
  prefetchHomes(slots: Int32Array, n: number): number {
    const words = this.words;
    const t = this.table;
    const mask = this.mask;
    let sink = 0;
    for (let i = 0; i < n; i++) sink ^= t[(words[slots[i]! * WORDS]! & mask) * 2 + 1]!;
    return sink;
  }

  /** Makes room for `entries` more ids in one step (bulk load). */
  reserve(entries: number): void {
    const cells = tableSizeFor(this.count + entries);
    if (cells > this.mask + 1) this.rehash(cells);
  }

  /** Slots `a` and `b` hold the same id bytes. */
  private equal(a: number, b: number): boolean {
    const words = this.words;
    const wa = a * WORDS;
    const wb = b * WORDS;
    const info = words[wa + 1]!;
    if (info !== words[wb + 1]) return false;
    const len = info & LENGTH;
    if ((info & OVERFLOW) === 0) {
      for (let i = 2, end = 2 + ((len + 3) >> 2); i < end; i++)
        if (words[wa + i] !== words[wb + i]) return false;
      return true;
    }
    const arena = this.arena;
    const oa = words[wa + 2]!;
    const ob = words[wb + 2]!;
    for (let i = 0; i < len; i++) if (arena[oa + i] !== arena[ob + i]) return false;
    return true;
  }

  /** Slot `a` holds the id bytes of batch scratch words from `wb` (an inline ASCII id). */
  private equalBatch(a: number, wb: number): boolean {
    const words = this.words;
    const batch = this.batchWords;
    const wa = a * WORDS;
    const info = words[wa + 1]!;
    if (info !== batch[wb + 1]) return false;
    for (let i = 2, end = 2 + ((info + 3) >> 2); i < end; i++)
      if (words[wa + i] !== batch[wb + i]) return false;
    return true;
  }

  /** Any id: validates, then writes UTF-8 inline (<= 40 bytes) or into the slot's overflow region. */
  private encodeSlow(s: number, id: string): number {
    if (typeof id !== 'string' || id.length === 0) {
      const got = typeof id === 'string' ? 'an empty string' : typeof id;
      throw new TimingWheelError(WheelErrorCode.InvalidId, `a job id must be a non-empty string, got ${got}`);
    }
    if (!isWellFormed(id)) {
      throw new TimingWheelError(
        WheelErrorCode.InvalidId,
        'a job id must be well-formed UTF-16 (it has a lone surrogate)',
      );
    }
    const len = Buffer.byteLength(id, 'utf8');
    if (len > MAX_ID_BYTES) {
      throw new TimingWheelError(
        WheelErrorCode.InvalidId,
        `a job id may have at most ${MAX_ID_BYTES} UTF-8 bytes, got ${len}`,
      );
    }
    const flags = len === id.length ? 0 : NON_ASCII;
    const w = s * WORDS;
    const words = this.words;
    const old = words[w + 1]!;
    const hadRegion = (old & OVERFLOW) !== 0;
    let h: number;
    if (len <= INLINE) {
      if (hadRegion) this.deadBytes += words[w + 3]!;
      const base = s * STRIDE + 8;
      this.area.fill(0, base, base + ((len + 3) & ~3));
      this.area.write(id, base, len, 'utf8');
      h = hashBytes(this.area, base, len);
      words[w + 1] = len | flags;
    } else {
      let offset = words[w + 2]!;
      let capacity = hadRegion ? words[w + 3]! : 0;
      if (capacity < len) {
        if (hadRegion) this.deadBytes += capacity;
        words[w + 1] = 0; // a compaction inside allocRegion must not keep the abandoned region
        offset = this.allocRegion(len);
        capacity = len;
      }
      this.arena.write(id, offset, len, 'utf8');
      h = hashBytes(this.arena, offset, len);
      words[w + 1] = len | flags | OVERFLOW;
      words[w + 2] = offset;
      words[w + 3] = capacity;
    }
    words[w] = h;
    return h;
  }

  private allocRegion(len: number): number {
    if (this.arenaTop + len > this.arena.length) this.resizeArena(len);
    const offset = this.arenaTop;
    this.arenaTop += len;
    return offset;
  }

  /** Makes room for `len` more bytes: compacts away abandoned regions when they are a quarter, and grows 2x. */
  private resizeArena(len: number): void {
    const compact = this.deadBytes * 4 >= this.arenaTop && this.deadBytes > 0;
    const live = this.arenaTop - (compact ? this.deadBytes : 0);
    const size = Math.max(4096, (live + len) * 2);
    if (size > MAX_ARENA_BYTES) {
      throw new TimingWheelError(
        WheelErrorCode.Capacity,
        'the long job ids of one timing wheel may total at most 4 GiB',
      );
    }
    const next = Buffer.alloc(size);
    if (!compact) {
      this.arena.copy(next, 0, 0, this.arenaTop);
    } else {
      // Keep the region of every slot that has one (in use or free: a free slot keeps it for reuse).
      const words = this.words;
      let at = 0;
      for (let s = 0; s < this.store.top; s++) {
        const w = s * WORDS;
        if ((words[w + 1]! & OVERFLOW) === 0) continue;
        const offset = words[w + 2]!;
        const capacity = words[w + 3]!;
        this.arena.copy(next, at, offset, offset + capacity);
        words[w + 2] = at;
        at += capacity;
      }
      this.arenaTop = at;
      this.deadBytes = 0;
    }
    this.arena = next;
  }

  private resizeArea(slots: number): void {
    const buffer = new ArrayBuffer(slots * STRIDE);
    const area = Buffer.from(buffer);
    if (this.slots > 0) this.area.copy(area, 0, 0, this.store.top * STRIDE);
    this.area = area;
    this.words = new Int32Array(buffer);
    this.slots = slots;
  }

  private rehash(cells: number): void {
    const old = this.table;
    const t = new Int32Array(cells * 2);
    const mask = cells - 1;
    for (let i = 0; i < old.length; i += 2) {
      const v = old[i + 1]!;
      if (v === 0) continue;
      const h = old[i]!;
      let j = h & mask;
      while (t[j * 2 + 1] !== 0) j = (j + 1) & mask;
      t[j * 2] = h;
      t[j * 2 + 1] = v;
    }
    this.table = t;
    this.mask = mask;
  }
}

/** Smallest power of two with `entries` at most 3/4 of it (minimum 64). */
function tableSizeFor(entries: number): number {
  let cells = 64;
  while (entries > cells * MAX_LOAD) cells *= 2;
  return cells;
}
