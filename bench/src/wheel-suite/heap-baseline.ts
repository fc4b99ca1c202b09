import { Heap } from 'heap-js';
import type { ExpiredView, TimerIndex } from './workloads';

interface HeapEntry {
  readonly id: string;
  readonly dueMs: number;
  readonly seq: number;
  cancelled: boolean;
}

/**
 * The baseline: a binary heap (heap-js) ordered by (dueMs, insertion), a `Map` from job id to entry,
 * and cancel by tombstone (the entry stays in the heap, flagged, until it reaches the top).
 */
export class HeapBaseline implements TimerIndex {
  readonly name = 'heap';
  private readonly heap = new Heap<HeapEntry>((a, b) => a.dueMs - b.dueMs || a.seq - b.seq);
  private readonly byId = new Map<string, HeapEntry>();
  private seq = 0;
  private readonly expired: { length: number; ids: string[]; dueMs: Float64Array } = {
    length: 0,
    ids: [],
    dueMs: new Float64Array(16),
  };

  get size(): number {
    return this.byId.size;
  }

  add(id: string, dueMs: number): void {
    if (this.byId.has(id)) throw new Error(`job ${id} is already pending`);
    const entry: HeapEntry = { id, dueMs, seq: this.seq++, cancelled: false };
    this.heap.push(entry);
    this.byId.set(id, entry);
  }

  cancelById(id: string): boolean {
    const entry = this.byId.get(id);
    if (entry === undefined) return false;
    entry.cancelled = true;
    this.byId.delete(id);
    return true;
  }

  advance(nowMs: number, maxBatch: number): ExpiredView {
    const out = this.expired;
    if (out.dueMs.length < maxBatch) out.dueMs = new Float64Array(maxBatch);
    let n = 0;
    while (n < maxBatch) {
      const top = this.heap.peek();
      if (top === undefined || top.dueMs > nowMs) break;
      this.heap.pop();
      if (top.cancelled) continue;
      this.byId.delete(top.id);
      out.ids[n] = top.id;
      out.dueMs[n++] = top.dueMs;
    }
    out.length = n;
    out.ids.length = n;
    return out;
  }
}
