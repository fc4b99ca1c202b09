import type pg from 'pg';
import type { Gauge } from '@sched/metrics';
import type { Logger } from '@sched/logging';
import { queueDepth, type QueueDepthRow } from '@sched/store';

/**
 * A count over the owned partitions that is too dear for every reconcile round (it reads a row per
 * job it counts), taken at most every `everyMs` (0: never), off the caller's path (with a large
 * backlog it takes a while and the catch-up's next claims must not wait for it), one at a time. A
 * count that lands after partitions left (`forget`) is dropped.
 */
export interface BacklogCount {
  count(partitions: number[], nothingToCount?: boolean): void;
  forget(): void;
}

export class PeriodicCount<T> implements BacklogCount {
  private countedAt = 0;
  private counting = false;
  /** Bumped by `forget`: a count begun before then is stale when it lands. */
  private generation = 0;

  constructor(
    private readonly d: {
      what: string;
      everyMs: number;
      log: Logger;
      read: (partitions: number[]) => Promise<T>;
      show: (result: T) => void;
      clear: () => void;
    },
  ) {}

  /** After a reconcile round, for the partitions it covered; `nothingToCount` clears at once. */
  count(partitions: number[], nothingToCount = false): void {
    if (this.d.everyMs === 0 || this.counting) return;
    if (nothingToCount) {
      this.d.clear();
      return;
    }
    if (Date.now() - this.countedAt < this.d.everyMs) return;
    this.countedAt = Date.now();
    this.counting = true;
    const generation = this.generation;
    this.d
      .read(partitions)
      .then((result) => {
        if (generation !== this.generation) return;
        this.d.show(result);
      })
      .catch((err: unknown) => this.d.log.warn({ err }, `counting ${this.d.what} failed`))
      .finally(() => {
        this.counting = false;
      });
  }

  /** Partitions left (or none are owned): clear the gauges and count again at the next round. */
  forget(): void {
    this.d.clear();
    this.countedAt = 0;
    this.generation++;
  }
}

/**
 * `sched_overdue_jobs_by_tenant`: the overdue backlog of a scheduler's partitions per tenant, so one
 * tenant's backlog is visible before its users notice. Counted only while there is a backlog (the
 * caller passes `nothingToCount` from the per-partition count, which reads the index alone).
 */
export function tenantBacklog(d: {
  pool: pg.Pool;
  gauge: Gauge;
  log: Logger;
  everyMs: number;
  graceMs: number;
}): PeriodicCount<{ tenant_id: string; n: number }[]> {
  return new PeriodicCount({
    what: 'the overdue backlog per tenant',
    everyMs: d.everyMs,
    log: d.log,
    read: async (partitions) =>
      (
        await d.pool.query<{ tenant_id: string; n: number }>(
          `SELECT tenant_id, count(*)::int AS n FROM job
           WHERE partition = ANY($1::int[]) AND phase = 0 AND state = 'SCHEDULED' AND due_at < now() - $2 * interval '1 millisecond'
           GROUP BY tenant_id`,
          [partitions, d.graceMs],
        )
      ).rows,
    show: (rows) => {
      d.gauge.reset();
      for (const r of rows) d.gauge.set({ tenant: r.tenant_id }, r.n);
    },
    clear: () => d.gauge.reset(),
  });
}

/** The per-queue gauges `queueBacklog` sets. */
export interface QueueGauges {
  overdue: Gauge;
  oldestOverdue: Gauge;
  dispatched: Gauge;
  oldestDispatched: Gauge;
  running: Gauge;
}

/**
 * Per queue, over the owned partitions: the due backlog (overdue, not claimed) and the queue depth
 * (claimed, not started; running), each with its oldest job's age (`queueDepth` in @sched/store).
 * Due backlog with a shallow queue points at the scheduler; a deep queue with no due backlog at the
 * relay or the workers. A queue that empties is set to 0 until partitions change, not dropped.
 */
export function queueBacklog(d: {
  pool: pg.Pool;
  gauges: QueueGauges;
  log: Logger;
  everyMs: number;
  graceMs: number;
}): PeriodicCount<QueueDepthRow[]> {
  const g = d.gauges;
  const all = [g.overdue, g.oldestOverdue, g.dispatched, g.oldestDispatched, g.running];
  const seen = new Set<string>();
  return new PeriodicCount({
    what: 'the backlog per queue',
    everyMs: d.everyMs,
    log: d.log,
    read: (partitions) => queueDepth(d.pool, { partitions, graceMs: d.graceMs }),
    show: (rows) => {
      const now = new Set(rows.map((r) => r.queue));
      for (const queue of seen) if (!now.has(queue)) for (const x of all) x.set({ queue }, 0);
      for (const r of rows) {
        seen.add(r.queue);
        const queue = { queue: r.queue };
        g.overdue.set(queue, r.overdue);
        g.oldestOverdue.set(queue, r.oldestOverdueSeconds);
        g.dispatched.set(queue, r.dispatched);
        g.oldestDispatched.set(queue, r.oldestDispatchedSeconds);
        g.running.set(queue, r.running);
      }
    },
    clear: () => {
      seen.clear();
      for (const x of all) x.reset();
    },
  });
}
