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

  /** Moves up to `n` entries to `out`. */
  moveTo(out: DueEntry[], n: number): void {
    const end = Math.min(this.items.length, this.head + n);
    for (let i = this.head; i < end; i++) out.push(this.items[i]!);
    this.head = end;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}

/**
 * Due entries taken out of one partition's wheel and not claimed yet, served fairly: the highest
 * priority class first, then an equal share of what is taken to every tenant with entries of that
 * class (a tenant with less than its share leaves the rest to the others), each tenant's entries in
 * due order. So when more is due at once than a firing round takes (a 9:00 burst), one tenant's
 * hundred thousand jobs do not hold back another's ten, and high-priority jobs go first; when
 * everything due fits in a round, nothing changes. Every entry here was due when it left the
 * wheel: serving them out of due order makes some later than they would have been, never early.
 */
export class FairReady {
  /** Per class in serving order: tenant number → its entries; insertion order is the rotation. */
  private readonly classes: Map<number, Fifo>[] = [new Map(), new Map(), new Map()];
  size = 0;

  push(e: DueEntry): void {
    const byTenant = this.classes[servedAs(e.tag)]!;
    const key = e.tag >> CLASS_BITS;
    let q = byTenant.get(key);
    if (!q) {
      q = new Fifo();
      byTenant.set(key, q);
    }
    q.items.push(e);
    this.size++;
  }

  /** Up to `n` entries: classes in order; within a class equal shares per tenant, rotating who is first. */
  take(n: number): DueEntry[] {
    const out: DueEntry[] = [];
    for (const byTenant of this.classes) {
      while (out.length < n && byTenant.size > 0) {
        const share = Math.max(1, Math.ceil((n - out.length) / byTenant.size));
        // One pass over the tenants; a tenant served goes to the back of the rotation.
        for (const [key, q] of [...byTenant]) {
          if (out.length >= n) break;
          q.moveTo(out, Math.min(share, n - out.length));
          byTenant.delete(key);
          if (q.length > 0) byTenant.set(key, q);
        }
      }
      if (out.length >= n) break;
    }
    this.size -= out.length;
    return out;
  }

  /** The earliest due time held (Infinity when empty): each tenant's first entry is its earliest. */
  oldestDueMs(): number {
    let oldest = Infinity;
    for (const byTenant of this.classes)
      for (const q of byTenant.values()) oldest = Math.min(oldest, q.items[q.head]!.dueMs);
    return oldest;
  }
}
