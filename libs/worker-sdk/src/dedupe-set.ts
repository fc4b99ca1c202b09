/**
 * Bounded set of recently seen dispatch event ids (oldest evicted first). Saves a database round
 * trip for redelivered records; correctness does not depend on it (the lease acquire refuses a
 * second start of the same attempt).
 */
export class DedupeSet {
  private readonly seen = new Set<string>();
  constructor(private readonly capacity: number) {}

  /** True when `id` was new (and is now remembered). */
  add(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.values().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
