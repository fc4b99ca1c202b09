import { type EntryStore, POS, RECORD_WORDS } from './entry-store';

/**
 * Binary min-heap (by dueMs) of the entries that were already due before the wheel's cursor when they
 * were added: past due times, jobs loaded after an outage. They leave on the next `advance`, ahead of
 * everything in the wheel. A record in the heap has `pos` = -1 - its heap index, so removal from the
 * middle (cancel, reschedule) is O(log m) with no search.
 */
export class OverdueHeap {
  private heap = new Int32Array(64);
  size = 0;

  constructor(private readonly store: EntryStore) {}

  get bytes(): number {
    return this.heap.byteLength;
  }

  /** The record due first; only valid when size > 0. */
  peek(): number {
    return this.heap[0]!;
  }

  /** Entries in the heap that are not cancelled ones waiting to be dropped. O(m). */
  countLive(): number {
    let live = 0;
    for (let i = 0; i < this.size; i++) if (!this.store.isDead(this.heap[i]!)) live++;
    return live;
  }

  push(s: number): void {
    if (this.size === this.heap.length) {
      const grown = new Int32Array(this.heap.length * 2);
      grown.set(this.heap);
      this.heap = grown;
    }
    this.siftUp(this.size++, s);
  }

  /** Removes record `s`, which must be in the heap. */
  remove(s: number): void {
    const at = -1 - this.store.i32[s * RECORD_WORDS + POS]!;
    const last = this.heap[--this.size]!;
    if (at === this.size) return;
    const f64 = this.store.f64;
    if (f64[last * 2]! < f64[s * 2]!) this.siftUp(at, last);
    else this.siftDown(at, last);
  }

  private siftUp(at: number, s: number): void {
    const { heap } = this;
    const { f64, i32 } = this.store;
    const key = f64[s * 2]!;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parent = heap[parentAt]!;
      if (f64[parent * 2]! <= key) break;
      heap[at] = parent;
      i32[parent * RECORD_WORDS + POS] = -1 - at;
      at = parentAt;
    }
    heap[at] = s;
    i32[s * RECORD_WORDS + POS] = -1 - at;
  }

  private siftDown(at: number, s: number): void {
    const { heap, size } = this;
    const { f64, i32 } = this.store;
    const key = f64[s * 2]!;
    for (;;) {
      let child = at * 2 + 1;
      if (child >= size) break;
      if (child + 1 < size && f64[heap[child + 1]! * 2]! < f64[heap[child]! * 2]!) child++;
      const c = heap[child]!;
      if (f64[c * 2]! >= key) break;
      heap[at] = c;
      i32[c * RECORD_WORDS + POS] = -1 - at;
      at = child;
    }
    heap[at] = s;
    i32[s * RECORD_WORDS + POS] = -1 - at;
  }
}
