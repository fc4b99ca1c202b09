import { RateGate } from './rate-gate.js';

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
  /** Called when an acquire waits for its queue's start rate (for a metric). */
  onRateWait?: (queue: string) => void;
  /** The clock of the queues' start rates, and the timer that wakes a waiter whose rate allows it. */
  nowMs?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (t: unknown) => void;
}

/** What bounds one queue's executions on top of the process slots. */
export interface QueueLimits {
  /** Most executions of the queue held at once (undefined: no own bound). */
  concurrency?: number;
  /** Most starts per second (undefined: no rate). */
  ratePerSec?: number;
  /** With `ratePerSec`: starts that may go at once before the rate applies. Default 1. */
  rateBurst?: number;
}

/** Raised to a waiter withdrawn with its group (see WaiterGroup). */
export class AdmissionWithdrawn extends Error {
  readonly code = 'SCHED_E_ADMISSION_WITHDRAWN';
  constructor(reason: unknown) {
    super(`withdrawn before a slot was granted: ${String(reason)}`);
  }
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
  done: boolean;
  flow: Flow;
  cls: ClassState;
  group: WaiterGroup | null;
}

/**
 * Waiters that may be withdrawn together (a fetched batch's): cheaper than one abort listener per
 * waiter. `withdraw` rejects those not yet granted with `AdmissionWithdrawn`; later acquires with
 * the group reject at once.
 */
export class WaiterGroup {
  /** @internal */ readonly waiters = new Set<Waiter>();
  /** @internal */ withdrawnBy: unknown = undefined;
  /** @internal */ withdrawn = false;
  /** @internal */ onWithdraw: ((g: WaiterGroup) => void) | null = null;

  withdraw(reason: unknown): void {
    if (this.withdrawn) return;
    this.withdrawn = true;
    this.withdrawnBy = reason;
    this.onWithdraw?.(this);
  }
}

/** A FIFO with amortised O(1) shift. */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(v: T): void {
    this.items.push(v);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }
}

/** The waiters of one tenant for one queue in one class, in arrival order. */
interface Flow {
  readonly key: string;
  readonly tenant: string;
  readonly queue: string;
  readonly fifo: Fifo<Waiter>;
  /** Waiters not withdrawn. */
  live: number;
}

interface ClassState {
  /** Virtual time of the class's next grant (stride scheduling, integer strides). */
  pass: number;
  readonly stride: number;
  /** Flows with waiters in this class, in round-robin order. */
  ring: Flow[];
  readonly flows: Map<string, Flow>;
  waiting: number;
}

interface QueueState {
  readonly cap: number;
  readonly rate: RateGate | null;
  held: number;
}

/**
 * The admission of a worker's executions: a counting semaphore whose waiters are served fairly
 * rather than in arrival order. A waiter is eligible while its tenant is under its cap, its queue
 * under its own `concurrency`, and its queue's start rate allows a start now; among the eligible,
 * the priority class is chosen by weight (stride scheduling: under contention the classes get
 * slots in proportion to their weights, so a busy high class cannot starve the low one and no aging
 * is needed; a class that starts waiting, or waits with nothing eligible, earns no credit for it),
 * then round robin over the tenants (per queue) waiting in that class, then arrival order. A waiter
 * that is not eligible holds nothing, so a capped tenant or a rate-limited queue never keeps slots
 * from the others. Without contention it is a plain counter.
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
  private readonly queues = new Map<string, QueueState>();
  private readonly tenantCap: number;
  private readonly tenantCaps: ReadonlyMap<string, number>;
  private readonly nowMs: () => number;
  private timer: unknown = null;
  private timerAt = Infinity;
  /** Some queue has a start rate (only then can waiters be held back by time alone). */
  private anyRate = false;

  constructor(private readonly o: FairSlotsOptions) {
    if (!Number.isInteger(o.size) || o.size < 1)
      throw new RangeError(`slots: size must be a positive integer, got ${o.size}`);
    if (o.weights.length !== 3 || o.weights.some((w) => !Number.isInteger(w) || w < 1 || w > 1000))
      throw new RangeError(
        `slots: weights must be three positive integers up to 1000 [high, normal, low], got [${o.weights}]`,
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
    this.nowMs = o.nowMs ?? (() => performance.now());
    const product = o.weights.reduce((a, b) => a * b, 1);
    this.classes = o.weights.map((w) => ({
      pass: 0,
      stride: product / w,
      ring: [],
      flows: new Map(),
      waiting: 0,
    }));
  }

  /** Gives a queue its own bound and start rate (before its first acquire). */
  defineQueue(queue: string, limits: QueueLimits): void {
    const c = limits.concurrency;
    if (c !== undefined && (!Number.isInteger(c) || c < 1))
      throw new RangeError(`queue ${queue}: concurrency must be a positive integer, got ${c}`);
    if (limits.rateBurst !== undefined && limits.ratePerSec === undefined)
      throw new RangeError(`queue ${queue}: rateBurst needs ratePerSec`);
    const rate =
      limits.ratePerSec === undefined
        ? null
        : new RateGate(limits.ratePerSec, limits.rateBurst ?? 1, this.nowMs);
    this.queues.set(queue, { cap: c ?? Infinity, rate, held: 0 });
    if (rate) this.anyRate = true;
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

  /** Slots the queue holds now. */
  heldByQueue(queue: string): number {
    return this.queues.get(queue)?.held ?? 0;
  }

  /** The tenant's cap (Infinity: none). */
  capOf(tenant: string): number {
    const c = this.tenantCaps.get(tenant) ?? this.tenantCap;
    return c === 0 ? Infinity : c;
  }

  /**
   * Resolves when a slot is held for the tenant and queue; pair every resolved acquire with one
   * `release(tenant, queue)`. Withdrawing `group` before then withdraws the waiter: the promise
   * rejects with `AdmissionWithdrawn` and nothing is held.
   */
  acquire(tenant: string, queue: string, cls: PriorityClass, group?: WaiterGroup): Promise<void> {
    if (group?.withdrawn) return Promise.reject(new AdmissionWithdrawn(group.withdrawnBy));
    if (this.waitingTotal === 0 && this.held < this.o.size && this.eligible(tenant, queue)) {
      this.take(tenant, queue);
      return Promise.resolve();
    }
    if (this.heldBy(tenant) >= this.capOf(tenant)) this.o.onCapped?.(tenant);
    if ((this.queues.get(queue)?.rate?.waitMs() ?? 0) > 0) this.o.onRateWait?.(queue);
    return new Promise<void>((resolve, reject) => {
      const c = this.classes[cls]!;
      if (c.waiting === 0) c.pass = Math.max(c.pass, this.clock);
      const key = `${tenant}\u0000${queue}`;
      let f = c.flows.get(key);
      if (!f) {
        f = { key, tenant, queue, fifo: new Fifo(), live: 0 };
        c.flows.set(key, f);
        c.ring.push(f);
      }
      const flow = f;
      const w: Waiter = { resolve, reject, done: false, flow, cls: c, group: group ?? null };
      flow.fifo.push(w);
      flow.live++;
      c.waiting++;
      this.waitingTotal++;
      if (group) {
        group.waiters.add(w);
        group.onWithdraw ??= (g) => this.withdraw(g);
      }
      this.dispatch();
    });
  }

  private withdraw(g: WaiterGroup): void {
    for (const w of g.waiters) {
      if (w.done) continue;
      w.done = true;
      w.flow.live--;
      w.cls.waiting--;
      this.waitingTotal--;
      w.reject(new AdmissionWithdrawn(g.withdrawnBy));
    }
    g.waiters.clear();
    this.dispatch();
  }

  release(tenant: string, queue: string): void {
    const n = this.running.get(tenant);
    if (n === undefined || this.held === 0) return;
    if (n <= 1) this.running.delete(tenant);
    else this.running.set(tenant, n - 1);
    const q = this.queues.get(queue);
    if (q && q.held > 0) q.held--;
    this.held--;
    this.dispatch();
  }

  private eligible(tenant: string, queue: string): boolean {
    if (this.heldBy(tenant) >= this.capOf(tenant)) return false;
    const q = this.queues.get(queue);
    return !q || (q.held < q.cap && (q.rate === null || q.rate.waitMs() === 0));
  }

  private take(tenant: string, queue: string): void {
    this.held++;
    this.running.set(tenant, this.heldBy(tenant) + 1);
    const q = this.queues.get(queue);
    if (q) {
      q.held++;
      q.rate?.reserve();
    }
  }

  /** Grants free slots to eligible waiters: the class with the lowest pass, round robin inside it. */
  private dispatch(): void {
    while (this.held < this.o.size && this.waitingTotal > 0) {
      let best: ClassState | null = null;
      let bestAt = -1;
      const blocked: ClassState[] = [];
      for (const c of this.classes) {
        if (c.waiting === 0) continue;
        if (best && c.pass >= best.pass) {
          // Not chosen anyway; whether it has an eligible waiter does not matter.
          continue;
        }
        const at = this.firstEligible(c);
        if (at < 0) {
          blocked.push(c);
          continue;
        }
        best = c;
        bestAt = at;
      }
      if (!best) break;
      const flow = best.ring[bestAt]!;
      best.ring.splice(bestAt, 1);
      let w = flow.fifo.shift();
      while (w?.done) w = flow.fifo.shift();
      flow.live--;
      if (flow.live > 0) best.ring.push(flow);
      else best.flows.delete(flow.key);
      best.waiting--;
      this.waitingTotal--;
      this.clock = best.pass;
      best.pass += best.stride;
      // A class that waited with nothing eligible earns no credit for that time.
      for (const c of blocked) c.pass = Math.max(c.pass, this.clock);
      this.take(flow.tenant, flow.queue);
      w!.done = true;
      w!.group?.waiters.delete(w!);
      w!.resolve();
    }
    if (this.anyRate) this.wakeForRates();
  }

  /** Index in the class's ring of the first flow with a live, eligible waiter (-1: none). */
  private firstEligible(c: ClassState): number {
    for (let i = 0; i < c.ring.length; i++) {
      const f = c.ring[i]!;
      if (f.live === 0) {
        // Only withdrawn waiters left: drop the flow.
        c.ring.splice(i--, 1);
        c.flows.delete(f.key);
        continue;
      }
      if (this.eligible(f.tenant, f.queue)) return i;
    }
    return -1;
  }

  /**
   * With slots free and waiters held back only by their queues' rates, sets a timer for the
   * earliest moment one of those rates allows a start.
   */
  private wakeForRates(): void {
    let soonest = Infinity;
    if (this.held < this.o.size && this.waitingTotal > 0) {
      for (const c of this.classes)
        for (const f of c.ring) {
          if (f.live === 0 || this.heldBy(f.tenant) >= this.capOf(f.tenant)) continue;
          const q = this.queues.get(f.queue);
          if (!q?.rate || q.held >= q.cap) continue;
          soonest = Math.min(soonest, q.rate.waitMs());
        }
    }
    const at = this.nowMs() + soonest;
    if (this.timer && soonest !== Infinity && at >= this.timerAt) return;
    if (this.timer) (this.o.clearTimer ?? ((t) => clearTimeout(t as NodeJS.Timeout)))(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    if (soonest === Infinity) return;
    this.timerAt = at;
    this.timer = (this.o.setTimer ?? ((fn: () => void, ms: number) => setTimeout(fn, ms)))(
      () => {
        this.timer = null;
        this.timerAt = Infinity;
        this.dispatch();
      },
      Math.max(1, Math.ceil(soonest)),
    );
    (this.timer as { unref?: () => unknown }).unref?.();
  }
}
