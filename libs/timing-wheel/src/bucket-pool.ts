import { type EntryStore, POS, RECORD_WORDS } from './entry-store';

const BLOCK_SHIFT = 4;
/** Entries per block: 16 int32 = one cache line. */
const BLOCK = 1 << BLOCK_SHIFT;
const IN_BLOCK = BLOCK - 1;

/**
 * The buckets' contents: each bucket is a stack of record numbers kept in a chain of 16-entry blocks
 * (all blocks full but the last), so a bucket is read as contiguous memory and the records it names
 * are fetched independently of one another: no pointer chasing through the records. A record's `pos`
 * word is its position here (block · 16 + offset), and a block knows its bucket, so removal is O(1):
 * the bucket's last entry moves into the hole.
 */
export class BucketPool {
  private slots: Int32Array;
  /**
   * Per block, side by side in one cache line (a push into an empty bucket writes both, a pop or a
   * removal reads both): [2·block] the block before it in its bucket's chain (-1: first), [2·block + 1]
   * its bucket.
   */
  private blockLinks: Int32Array;
  private blockCount: number;
  private blockTop = 0;
  /** Free blocks, most recently freed (still in cache) on top. */
  private freeBlocks: Int32Array;
  private freeCount = 0;
  /** Per bucket: its last block (-1: empty) and number of entries. */
  private readonly tail: Int32Array;
  readonly count: Int32Array;

  constructor(
    buckets: number,
    private readonly store: EntryStore,
  ) {
    this.tail = new Int32Array(buckets).fill(-1);
    this.count = new Int32Array(buckets);
    const blocks = 64;
    this.slots = new Int32Array(blocks * BLOCK);
    this.blockLinks = new Int32Array(blocks * 2);
    this.blockCount = blocks;
    this.freeBlocks = new Int32Array(blocks);
  }

  get bytes(): number {
    return (
      this.slots.byteLength +
      this.blockLinks.byteLength +
      this.freeBlocks.byteLength +
      this.tail.byteLength * 2
    );
  }

  /** Adds record `s` to bucket `b`; true when the bucket was empty. */
  push(b: number, s: number): boolean {
    const n = this.count[b]!;
    let block = this.tail[b]!;
    if ((n & IN_BLOCK) === 0) {
      const fresh = this.allocBlock();
      this.blockLinks[fresh * 2] = block;
      this.blockLinks[fresh * 2 + 1] = b;
      this.tail[b] = block = fresh;
    }
    const pos = (block << BLOCK_SHIFT) | (n & IN_BLOCK);
    this.slots[pos] = s;
    this.count[b] = n + 1;
    this.store.i32[s * RECORD_WORDS + POS] = pos;
    return n === 0;
  }

  /** Removes the entry at `pos`; returns its bucket if that is now empty, else -1. */
  remove(pos: number): number {
    const b = this.blockLinks[(pos >>> BLOCK_SHIFT) * 2 + 1]!;
    const n = this.count[b]! - 1;
    const block = this.tail[b]!;
    const last = (block << BLOCK_SHIFT) | (n & IN_BLOCK);
    if (last !== pos) {
      const moved = this.slots[last]!;
      this.slots[pos] = moved;
      this.store.i32[moved * RECORD_WORDS + POS] = pos;
    }
    this.count[b] = n;
    if ((n & IN_BLOCK) === 0) this.dropTail(b, block);
    return n === 0 ? b : -1;
  }

  /**
   * Moves up to `max` record numbers from the end of bucket `b` into `out` from index `at`; returns how
   * many. Their `pos` words are left stale: the caller re-places or frees them.
   */
  pop(b: number, out: Int32Array, at: number, max: number): number {
    let n = this.count[b]!;
    let block = this.tail[b]!;
    const take = Math.min(n, max);
    const slots = this.slots;
    for (let k = 0; k < take; k++) {
      n--;
      out[at + k] = slots[(block << BLOCK_SHIFT) | (n & IN_BLOCK)]!;
      if ((n & IN_BLOCK) === 0) {
        const prev = this.blockLinks[block * 2]!;
        this.releaseBlock(block);
        block = prev;
      }
    }
    this.count[b] = n;
    this.tail[b] = block;
    return take;
  }

  private dropTail(b: number, block: number): void {
    this.tail[b] = this.blockLinks[block * 2]!;
    this.releaseBlock(block);
  }

  private releaseBlock(block: number): void {
    this.freeBlocks[this.freeCount++] = block;
  }

  private allocBlock(): number {
    if (this.freeCount > 0) return this.freeBlocks[--this.freeCount]!;
    if (this.blockTop === this.blockCount) this.growBlocks();
    return this.blockTop++;
  }

  private growBlocks(): void {
    const blocks = this.blockCount * 2;
    const slots = new Int32Array(blocks * BLOCK);
    slots.set(this.slots);
    this.slots = slots;
    const links = new Int32Array(blocks * 2);
    links.set(this.blockLinks);
    this.blockLinks = links;
    this.blockCount = blocks;
    const free = new Int32Array(blocks);
    free.set(this.freeBlocks);
    this.freeBlocks = free;
  }
}
