import type { DueEntry } from './due-index.js';

/** Priority classes of a due entry's tag, in the order they are served. */
export const FIRE_CLASSES = ['high', 'normal', 'low'] as const;
const CLASS_BITS = 2;
/** Class bits of a tag: 0 normal (so that tag 0 is tenant 0, normal), 1 high, 2 low. */
const NORMAL = 0;
const HIGH = 1;
const LOW = 2;
/** Most tenants one process tells apart (a tag is an int32); later ones share index 0. */
const MAX_TENANTS = 2 ** 28;

/**
 * Tags for the due-time index: a tenant (a small number per tenant id, this process's own) and a
 * priority class (high > 0, normal = 0, low < 0), in one int32 the timing wheel keeps with each
 * entry. Tag 0 is what an entry gets when neither is known (a reaped job, a schedule occurrence):
 * tenant 0, normal class.
 */
export class FireTags {
  private readonly tenants = new Map<string, number>();

  tag(tenantId: string, priority: number): number {
    let t = this.tenants.get(tenantId);
    if (t === undefined) {
      t = this.tenants.size + 1 < MAX_TENANTS ? this.tenants.size + 1 : 0;
      this.tenants.set(tenantId, t);
    }
    const cls = priority > 0 ? HIGH : priority < 0 ? LOW : NORMAL;
    return (t << CLASS_BITS) | cls;
  }

  /** A tag served before every job: schedule entries (their generation is cheap and feeds jobs). */
  static readonly FIRST = HIGH;
}

/** Where a tag's class is served: 0 high, 1 normal, 2 low (an unused class value 3: normal). */
function servedAs(tag: number): number {
  const c = tag & ((1 << CLASS_BITS) - 1);
  return c === HIGH ? 0 : c === LOW ? 2 : 1;
}

/** A FIFO of entries: an array read from `head`, compacted when half of it is read. */
class Fifo {
  items: DueEntry[] = [];
  head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  /**
   * Moves up to `n` live entries to `out` (live: `held` maps its job id to this very entry; a
   * discarded one is dropped on the way) and forgets them in `held`. Returns how many dead ones it
   * dropped.
   */
  moveTo(out: DueEntry[], n: number, held: Map<string, DueEntry>): number {
    let i = this.head;
    let moved = 0;
    let dropped = 0;
    for (; i < this.items.length && moved < n; i++) {
      const e = this.items[i]!;
      if (held.get(e.jobId) === e) {
        held.delete(e.jobId);
        out.push(e);
        moved++;
      } else dropped++;
    }
    this.head = i;
    this.release();
    return dropped;
  }

  /** Drops the discarded entries at the front (see `moveTo`); returns how many. */
  dropDeadFront(held: Map<string, DueEntry>): number {
    const from = this.head;
    while (this.head < this.items.length && held.get(this.items[this.head]!.jobId) !== this.items[this.head])
      this.head++;
    const dropped = this.head - from;
    this.release();
    return dropped;
  }

  /** Lets go of what was read: all of it when it is all read, else once half of it is. */
  private release(): void {
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}

/** Default weights of the classes `[high, normal, low]`, as the worker's admission. */
export const DEFAULT_FIRE_WEIGHTS: readonly [number, number, number] = [7, 2, 1];
/** Passes are rebased (all lowered by the smallest) once the virtual time passes this. */
const REBASE_AT = 2 ** 40;

/**
 * Due entries taken out of one partition's wheel and not claimed yet, served fairly: by priority
 * class in proportion to weights (default 7 : 2 : 1 for high, normal, low; stride scheduling, so
 * under a sustained high-priority backlog the normal and low classes still get their share of every
 * round, and a class that had nothing waiting earns no credit for that time), then an equal share
 * of what a class gets to every tenant with entries of that class (a tenant with less than its
 * share leaves the rest to the others), each tenant's entries in due order. So when more is due at
 * once than a firing round takes (a 9:00 burst), one tenant's hundred thousand jobs do not hold
 * back another's ten, and high-priority jobs go first; when everything due fits in a round,
 * nothing changes. Every entry here was due when it left the wheel: serving them out of due order
 * makes some later than they would have been, never early.
 *
 * A job cancelled or rescheduled while its entry waits here is `discard`ed: it leaves `size` and
 * its class's count at once and its entry is dropped when its queue is next read (or when dead
 * entries outnumber live ones), so it is neither offered to a claim nor counted as pending.
 */
export class FairReady {
  /** Per class in serving order: tenant number → its entries; insertion order is the rotation. */
  private readonly classes: Map<number, Fifo>[] = [new Map(), new Map(), new Map()];
  /** Entries held per class. */
  private readonly counts = [0, 0, 0];
  /** Stride scheduling: a class's pass grows by its stride per entry it is given. */
  private readonly strides: number[];
  private readonly passes = [0, 0, 0];
  private readonly active = [false, false, false];
  private vtime = 0;
  /** Live entries by job id (an entry in a queue that is not the one mapped here is dead). */
  private readonly held = new Map<string, DueEntry>();
  /** Dead entries still in the queues. */
  private dead = 0;
  size = 0;

  constructor(weights: readonly [number, number, number] = DEFAULT_FIRE_WEIGHTS) {
    if (weights.length !== 3 || weights.some((w) => !Number.isSafeInteger(w) || w < 1 || w > 1000))
      throw new RangeError(`fire weights must be three integers from 1 to 1000, got ${String(weights)}`);
    const product = weights[0] * weights[1] * weights[2];
    // Integer strides (product / weight): passes stay exact, so equal weights tie exactly.
    this.strides = weights.map((w) => product / w);
  }

  push(e: DueEntry): void {
    // The same job twice (its entry went back to the wheel and is due again): the later one counts.
    if (this.held.has(e.jobId)) this.discard(e.jobId);
    this.held.set(e.jobId, e);
    const c = servedAs(e.tag);
    const byTenant = this.classes[c]!;
    const key = e.tag >> CLASS_BITS;
    let q = byTenant.get(key);
    if (!q) {
      q = new Fifo();
      byTenant.set(key, q);
    }
    q.items.push(e);
    this.counts[c]!++;
    this.size++;
  }

  /**
   * Up to `n` entries: split over the classes by weight (what a class cannot use goes to the
   * others), within a class equal shares per tenant, rotating who is first.
   */
  take(n: number): DueEntry[] {
    const out: DueEntry[] = [];
    const alloc = this.allocate(Math.min(n, this.size));
    for (let c = 0; c < 3; c++) {
      const want = alloc[c]!;
      if (want === 0) continue;
      const before = out.length;
      const byTenant = this.classes[c]!;
      while (out.length - before < want && byTenant.size > 0) {
        const left = want - (out.length - before);
        const share = Math.max(1, Math.ceil(left / byTenant.size));
        // One pass over the tenants; a tenant served goes to the back of the rotation.
        for (const [key, q] of [...byTenant]) {
          const room = want - (out.length - before);
          if (room <= 0) break;
          this.dead -= q.moveTo(out, Math.min(share, room), this.held);
          byTenant.delete(key);
          if (q.length > 0) byTenant.set(key, q);
        }
      }
      this.counts[c]! -= out.length - before;
      if (this.counts[c] === 0) this.active[c] = false;
    }
    this.size -= out.length;
    return out;
  }

  /** The live entry of this job waiting here, if any. */
  get(jobId: string): DueEntry | undefined {
    return this.held.get(jobId);
  }

  /**
   * Takes a job's entry out (its job was cancelled, rescheduled or claimed by another path) and
   * returns it, or undefined when none is held.
   */
  discard(jobId: string): DueEntry | undefined {
    const e = this.held.get(jobId);
    if (e === undefined) return undefined;
    this.held.delete(jobId);
    const c = servedAs(e.tag);
    this.counts[c]!--;
    if (this.counts[c] === 0) this.active[c] = false;
    this.size--;
    this.dead++;
    if (this.dead > 1024 && this.dead > this.size) this.compact();
    return e;
  }

  /** Drops every dead entry (amortised: runs when they outnumber the live ones). */
  private compact(): void {
    for (const byTenant of this.classes)
      for (const [key, q] of [...byTenant]) {
        const live: DueEntry[] = [];
        for (let i = q.head; i < q.items.length; i++) {
          const e = q.items[i]!;
          if (this.held.get(e.jobId) === e) live.push(e);
        }
        q.items = live;
        q.head = 0;
        if (live.length === 0) byTenant.delete(key);
      }
    this.dead = 0;
  }

  /** How many of `n` entries each class gets: stride scheduling over the classes holding entries. */
  private allocate(n: number): number[] {
    const alloc = [0, 0, 0];
    const avail = [...this.counts];
    for (let c = 0; c < 3; c++) {
      // A class that had nothing waiting starts level with the others: no credit for idle time.
      if (avail[c]! > 0 && !this.active[c]) {
        this.passes[c] = Math.max(this.passes[c]!, this.vtime);
        this.active[c] = true;
      }
    }
    const only = avail.filter((a) => a > 0).length === 1 ? avail.findIndex((a) => a > 0) : -1;
    if (only >= 0) {
      // One class waiting (the usual case): all of it, without the per-entry walk; the virtual
      // time ends where the walk's would, at the pass of the last entry given.
      if (n > 0) {
        alloc[only] = n;
        this.passes[only]! += this.strides[only]! * n;
        this.vtime = this.passes[only]! - this.strides[only]!;
      }
    } else {
      for (let k = 0; k < n; k++) {
        let c = -1;
        for (let i = 0; i < 3; i++) if (avail[i]! > 0 && (c < 0 || this.passes[i]! < this.passes[c]!)) c = i;
        if (c < 0) break;
        alloc[c]!++;
        avail[c]!--;
        this.vtime = this.passes[c]!;
        this.passes[c]! += this.strides[c]!;
      }
    }
    if (this.vtime > REBASE_AT) {
      const base = this.vtime;
      for (let c = 0; c < 3; c++) this.passes[c] = Math.max(0, this.passes[c]! - base);
      this.vtime = 0;
    }
    return alloc;
  }

  /**
   * The earliest due time held (Infinity when empty): each tenant's first live entry is its
   * earliest. Discarded entries at a tenant's front are dropped on the way (each once), so a
   * cancelled job's old due time does not keep the partition looking behind (and out of the
   * catch-up, see `partitionsToDrain`) until a compaction.
   */
  oldestDueMs(): number {
    if (this.size === 0) return Infinity;
    let oldest = Infinity;
    for (const byTenant of this.classes)
      for (const q of byTenant.values()) {
        this.dead -= q.dropDeadFront(this.held);
        if (q.length > 0) oldest = Math.min(oldest, q.items[q.head]!.dueMs);
      }
    return oldest;
  }
}
