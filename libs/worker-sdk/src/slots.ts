/**
 * A counting semaphore with a FIFO wait queue: at most `size` holders at once, and waiters are
 * served in the order they asked, so no partition's batch starves another's.
 */
export class Slots {
  private held = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`slots: size must be a positive integer, got ${size}`);
  }

  /** Holders now (for metrics and tests). */
  get inUse(): number {
    return this.held;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Resolves when a slot is held; pair every acquire with one release. */
  acquire(): Promise<void> {
    if (this.held < this.size) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    // The slot passes straight to the next waiter: `held` stays the same.
    if (next) next();
    else if (this.held > 0) this.held--;
  }
}
