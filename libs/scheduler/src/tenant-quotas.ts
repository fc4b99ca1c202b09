import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { tenantPendingCaps, tenantPendingCounts } from '@sched/store';

/**
 * This process's share of what is left under a fleet-wide cap: `left` x owned / all partitions,
 * rounded down, and the process that owns partition 0 takes the remainder of the rounding, so the
 * shares of the fleet never add up to more than `left` and some process can always take the last
 * one. Pure.
 */
export function shareOf(left: number, owned: readonly number[], total: number): number {
  if (left <= 0 || owned.length === 0) return 0;
  const n = Math.max(owned.length, total);
  if (!owned.includes(0)) return Math.floor((left * owned.length) / n);
  return left - Math.floor((left * (n - owned.length)) / n);
}

export interface PendingCapDeps {
  pool: pg.Pool;
  log: Logger;
  owned(): number[];
  totalPartitions(): number;
  /** Shortest time between two counts (ms); a count that took d waits at least 20 d. */
  everyMs: number;
  now?: () => number;
}

/**
 * The tenants' pending caps (`tenant.max_pending_jobs`): the most jobs of a tenant not finished
 * yet, fleet-wide. Each pass reads the caps and counts the capped tenants' pending jobs over every
 * partition; until the next count this process admits at most its share of what is left
 * (`shareOf`) less the creates it admitted since. Completions free room at the next count, so the
 * cap errs on the side of refusing: never more pending than the cap, some refusals while room was
 * freed and not counted yet. A tenant without a cap costs nothing.
 */
export class PendingCaps {
  private caps = new Map<string, number>();
  private counts = new Map<string, number>();
  /** Creates committed since the last count began (the count may or may not include them). */
  private taken = new Map<string, number>();
  /** Creates admitted and not committed yet (any count leaves them out). */
  private inFlight = new Map<string, number>();
  private nextAt = 0;
  private readonly now: () => number;

  constructor(private readonly d: PendingCapDeps) {
    this.now = d.now ?? Date.now;
  }

  /**
   * The creates among `cmds` (in order) that are over their tenant's cap; the others take room, held
   * by the returned ticket until `settle` says whether they were committed.
   */
  admit<T extends { kind: string; tenantId: string }>(cmds: readonly T[]): { over: T[]; ticket: Ticket } {
    const ticket: Ticket = new Map();
    if (this.caps.size === 0) return { over: [], ticket };
    const owned = this.d.owned();
    const total = this.d.totalPartitions();
    const over: T[] = [];
    for (const c of cmds) {
      if (c.kind !== 'CreateJob') continue;
      const cap = this.caps.get(c.tenantId);
      if (cap === undefined) continue;
      const held = (this.taken.get(c.tenantId) ?? 0) + (this.inFlight.get(c.tenantId) ?? 0);
      const room = shareOf(cap - (this.counts.get(c.tenantId) ?? 0), owned, total) - held;
      if (room <= 0) {
        over.push(c);
        continue;
      }
      bump(this.inFlight, c.tenantId, 1);
      bump(ticket, c.tenantId, 1);
    }
    return { over, ticket };
  }

  /**
   * The creates of a ticket were committed (they take room until a count includes them) or not
   * (their room is given back). A ticket whose creates were then refused for another reason may be
   * settled as committed: the room comes back at the next count.
   */
  settle(ticket: Ticket, committed: boolean): void {
    for (const [tenant, n] of ticket) {
      bump(this.inFlight, tenant, -n);
      if (committed) bump(this.taken, tenant, n);
    }
  }

  /** The cap of a tenant, for the rejection's message. */
  capOf(tenantId: string): number | undefined {
    return this.caps.get(tenantId);
  }

  /** One pass: the caps, then the counts when it is time (spaced by what the count costs). */
  async once(): Promise<void> {
    const caps = await tenantPendingCaps(this.d.pool);
    if (caps.size === 0) {
      this.caps = caps;
      this.counts = new Map();
      this.taken = new Map();
      return;
    }
    const t0 = this.now();
    if (t0 < this.nextAt && sameKeys(caps, this.caps)) {
      this.caps = caps;
      return;
    }
    // Committed before the count starts: in it. Committed while it runs: maybe, kept as taken.
    const takenBefore = this.taken;
    this.taken = new Map();
    let counts: Map<string, number>;
    try {
      counts = await tenantPendingCounts(this.d.pool, [...caps.keys()]);
    } catch (err) {
      for (const [t, n] of takenBefore) bump(this.taken, t, n);
      throw err;
    }
    const took = this.now() - t0;
    this.nextAt = this.now() + Math.max(this.d.everyMs, 20 * took);
    if (took > 1_000)
      this.d.log.warn(
        { tookMs: took, tenants: caps.size, nextInMs: this.nextAt - this.now() },
        "counting the capped tenants' pending jobs is slow: the counts are spaced out",
      );
    this.caps = caps;
    this.counts = counts;
  }
}

/** Creates admitted per tenant, held until settled. */
export type Ticket = Map<string, number>;

function bump(m: Map<string, number>, k: string, by: number): void {
  const n = (m.get(k) ?? 0) + by;
  if (n > 0) m.set(k, n);
  else m.delete(k);
}

function sameKeys(a: ReadonlyMap<string, unknown>, b: ReadonlyMap<string, unknown>): boolean {
  if (a.size !== b.size) return false;
  for (const k of a.keys()) if (!b.has(k)) return false;
  return true;
}
