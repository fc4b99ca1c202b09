import type pg from 'pg';
import type { Gauge } from '@sched/metrics';
import type { Logger } from '@sched/logging';

/**
 * `sched_overdue_jobs_by_tenant`: the overdue backlog of a scheduler's partitions per tenant, so one
 * tenant's backlog is visible before its users notice. Counted at most every `everyMs` (0: never),
 * and only while there is a backlog: the count reads each overdue row, where the per-partition
 * count reads the index alone. It runs off the caller's path (with a large backlog it takes a while
 * and the catch-up's next claims must not wait for it), one at a time; a count that lands after
 * partitions left (`forget`) is dropped.
 */
export class TenantBacklog {
  private countedAt = 0;
  private counting = false;
  /** Bumped by `forget`: a count begun before then is stale when it lands. */
  private generation = 0;

  constructor(
    private readonly d: {
      pool: pg.Pool;
      gauge: Gauge;
      log: Logger;
      everyMs: number;
      graceMs: number;
    },
  ) {}

  /** After a reconcile round: `anyOverdue` from the per-partition count of the same partitions. */
  count(partitions: number[], anyOverdue: boolean): void {
    if (this.d.everyMs === 0 || this.counting) return;
    if (!anyOverdue) {
      this.d.gauge.reset();
      return;
    }
    if (Date.now() - this.countedAt < this.d.everyMs) return;
    this.countedAt = Date.now();
    this.counting = true;
    const generation = this.generation;
    this.d.pool
      .query<{ tenant_id: string; n: number }>(
        `SELECT tenant_id, count(*)::int AS n FROM job
         WHERE partition = ANY($1::int[]) AND state = 'SCHEDULED' AND due_at < now() - $2 * interval '1 millisecond'
         GROUP BY tenant_id`,
        [partitions, this.d.graceMs],
      )
      .then(({ rows }) => {
        if (generation !== this.generation) return;
        this.d.gauge.reset();
        for (const r of rows) this.d.gauge.set({ tenant: r.tenant_id }, r.n);
      })
      .catch((err: unknown) => this.d.log.warn({ err }, 'counting the overdue backlog per tenant failed'))
      .finally(() => {
        this.counting = false;
      });
  }

  /** Partitions left (or none are owned): clear the gauge and count again at the next round. */
  forget(): void {
    this.d.gauge.reset();
    this.countedAt = 0;
    this.generation++;
  }
}
