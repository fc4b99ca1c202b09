/**
 * Bounded set of recently seen dispatch event ids (oldest evicted first). Saves a database round
 * trip for redelivered records; correctness does not depend on it (the lease acquire refuses a
 * second start of the same attempt).
 *
 * Eviction goes through a ring of the ids in arrival order, never through the Set's iterator: V8
 * leaves a hole for every deleted entry until the next rehash, so `values().next()` after many
 * evictions walks the holes, and a full set made every add O(capacity).
 */
export class DedupeSet {
  private readonly seen = new Set<string>();
  private readonly ring: (string | undefined)[];
  private next = 0;

  constructor(private readonly capacity: number) {
    this.ring = new Array<string | undefined>(capacity);
  }

  /** True when `id` was new (and is now remembered). */
  add(id: string): boolean {
    if (this.seen.has(id)) return false;
    const old = this.ring[this.next];
    if (old !== undefined) this.seen.delete(old);
    this.ring[this.next] = id;
    this.next = (this.next + 1) % this.capacity;
    this.seen.add(id);
    return true;
  }

  /**
   * Forgets `id` (its start failed, so a redelivery must be tried). Its ring slot stays until it
   * is overwritten; if the id comes back meanwhile it may be forgotten early: a wasted round trip,
   * never a missed job.
   */
  forget(id: string): void {
    this.seen.delete(id);
  }

  get size(): number {
    return this.seen.size;
  }
}
