/**
 * Priority classes of the fair admission: `high` (priority > 0), `normal` (0) and `low` (< 0), in
 * that order.
 */
export const PRIORITY_CLASSES = ['high', 'normal', 'low'] as const;
export type PriorityClass = 0 | 1 | 2;

export function priorityClass(priority: number): PriorityClass {
  return priority > 0 ? 0 : priority < 0 ? 2 : 1;
}

export interface FairSlotsOptions {
  /** Holders at once. */
  size: number;
  /** Share of contended slots per class, `[high, normal, low]`: positive integers. */
  weights: readonly [number, number, number];
  /** Most slots one tenant holds at once (0: no cap). */
  tenantCap?: number;
  /** Per-tenant caps that override `tenantCap` (0: no cap for that tenant). */
  tenantCaps?: Readonly<Record<string, number>>;
  /** Called when an acquire waits because its tenant holds its cap (for a metric). */
  onCapped?: (tenant: string) => void;
}

/** A FIFO with amortised O(1) shift. */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(v: T): void {
    this.items.push(v);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }
}

interface ClassState {
  /** Virtual time of the class's next grant (stride scheduling). */
  pass: number;
  readonly stride: number;
  /** Tenants with waiters in this class, in round-robin order. */
  ring: string[];
  readonly queues: Map<string, Fifo<() => void>>;
  waiting: number;
}

/**
 * A counting semaphore whose waiters are served fairly rather than in arrival order: by priority
 * class with weights (stride scheduling: under contention the classes get slots in proportion to
 * their weights, so a busy high class cannot starve the low one and no aging is needed), then round
 * robin over the tenants waiting in that class (one tenant's thousand jobs cannot queue ahead of
 * another's ten), then in arrival order within a tenant. A tenant at its cap is passed over until
 * one of its holders releases. Without contention it is a plain counter.
 *
 * Example, weights [7, 2, 1], one slot freeing at a time, all three classes waiting: of every ten
 * grants seven go to high, two to normal, one to low, interleaved.
 */
export class FairSlots {
  private held = 0;
  private waitingTotal = 0;
  /** The pass of the class served last: a class that starts waiting joins at it, with no credit. */
  private clock = 0;
  private readonly running = new Map<string, number>();
  private readonly classes: ClassState[];
  private readonly tenantCap: number;
  private readonly tenantCaps: ReadonlyMap<string, number>;
  /** Callers of `whenWaitingBelow`, in the order they asked. */
  private roomWaiters: { below: number; resolve: () => void }[] = [];

  constructor(private readonly o: FairSlotsOptions) {
    if (!Number.isInteger(o.size) || o.size < 1)
      throw new RangeError(`slots: size must be a positive integer, got ${o.size}`);
    if (o.weights.length !== 3 || o.weights.some((w) => !Number.isInteger(w) || w < 1))
      throw new RangeError(
        `slots: weights must be three positive integers [high, normal, low], got [${o.weights}]`,
      );
    const cap = o.tenantCap ?? 0;
    if (!Number.isInteger(cap) || cap < 0)
      throw new RangeError(`slots: tenantCap must be a non-negative integer (0: no cap), got ${cap}`);
    for (const [t, c] of Object.entries(o.tenantCaps ?? {}))
      if (!Number.isInteger(c) || c < 0)
        throw new RangeError(
          `slots: cap of tenant "${t}" must be a non-negative integer (0: no cap), got ${c}`,
        );
    this.tenantCap = cap;
    this.tenantCaps = new Map(Object.entries(o.tenantCaps ?? {}));
    this.classes = o.weights.map((w) => ({
      pass: 0,
      stride: 1 / w,
      ring: [],
      queues: new Map(),
      waiting: 0,
    }));
  }

  get size(): number {
    return this.o.size;
  }

  /** Holders now. */
  get inUse(): number {
    return this.held;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.waitingTotal;
  }

  /** Callers waiting, per class `[high, normal, low]`. */
  waitingByClass(): [number, number, number] {
    return [this.classes[0]!.waiting, this.classes[1]!.waiting, this.classes[2]!.waiting];
  }

  /** Slots the tenant holds now. */
  heldBy(tenant: string): number {
    return this.running.get(tenant) ?? 0;
  }

  /** The tenant's cap (Infinity: none). */
  capOf(tenant: string): number {
    const c = this.tenantCaps.get(tenant) ?? this.tenantCap;
    return c === 0 ? Infinity : c;
  }

  /** Resolves when a slot is held for the tenant; pair every acquire with one `release(tenant)`. */
  acquire(tenant: string, cls: PriorityClass): Promise<void> {
    // Every waiter that could run is already running whenever a slot is free (dispatch() leaves
    // none behind), so a free slot may go straight to a caller under its cap.
    if (this.held < this.o.size && this.heldBy(tenant) < this.capOf(tenant)) {
      this.take(tenant);
      return Promise.resolve();
    }
    if (this.heldBy(tenant) >= this.capOf(tenant)) this.o.onCapped?.(tenant);
    return new Promise<void>((resolve) => {
      const c = this.classes[cls]!;
      if (c.waiting === 0) c.pass = Math.max(c.pass, this.clock);
      let q = c.queues.get(tenant);
      if (!q) {
        q = new Fifo();
        c.queues.set(tenant, q);
        c.ring.push(tenant);
      }
      q.push(resolve);
      c.waiting++;
      this.waitingTotal++;
    });
  }

  /**
   * Resolves once fewer than `n` callers wait for a slot: lets a producer of acquires bound how
   * many wait at once (each holds what it will run), while still queuing enough of them for the
   * choice between tenants and classes to mean something.
   */
  whenWaitingBelow(n: number): Promise<void> {
    if (this.waitingTotal < n) return Promise.resolve();
    return new Promise<void>((resolve) => this.roomWaiters.push({ below: n, resolve }));
  }

  release(tenant: string): void {
    const n = this.running.get(tenant);
    if (n === undefined || this.held === 0) return;
    if (n <= 1) this.running.delete(tenant);
    else this.running.set(tenant, n - 1);
    this.held--;
    this.dispatch();
  }

  private take(tenant: string): void {
    this.held++;
    this.running.set(tenant, this.heldBy(tenant) + 1);
  }

  /** Grants free slots to waiters: the class with the lowest pass, round robin inside it. */
  private dispatch(): void {
    while (this.held < this.o.size && this.waitingTotal > 0) {
      let best: ClassState | null = null;
      let bestAt = -1;
      for (const c of this.classes) {
        if (c.waiting === 0 || (best && c.pass >= best.pass)) continue;
        const at = this.firstEligible(c);
        if (at < 0) continue;
        best = c;
        bestAt = at;
      }
      if (!best) return;
      const tenant = best.ring[bestAt]!;
      best.ring.splice(bestAt, 1);
      const q = best.queues.get(tenant)!;
      const resolve = q.shift()!;
      if (q.length > 0) best.ring.push(tenant);
      else best.queues.delete(tenant);
      best.waiting--;
      this.waitingTotal--;
      this.clock = best.pass;
      best.pass += best.stride;
      this.take(tenant);
      resolve();
    }
    if (this.roomWaiters.length > 0) {
      const still: { below: number; resolve: () => void }[] = [];
      for (const w of this.roomWaiters) {
        if (this.waitingTotal < w.below) w.resolve();
        else still.push(w);
      }
      this.roomWaiters = still;
    }
  }

  private firstEligible(c: ClassState): number {
    for (let i = 0; i < c.ring.length; i++) {
      const t = c.ring[i]!;
      if (this.heldBy(t) < this.capOf(t)) return i;
    }
    return -1;
  }
}
