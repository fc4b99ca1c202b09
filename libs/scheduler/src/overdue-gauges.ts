import type pg from 'pg';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/** What `countOverdue` read: overdue jobs per partition, and the dead-letter queue's size. */
export interface OverdueCounts {
  perPartition: Map<number, { n: number; age: number }>;
  dlq: { n: number; age: number | null };
}

/**
 * Counts the owned partitions' overdue jobs (SCHEDULED, due more than `graceMs` ago; how many and
 * the oldest one's age) and the dead letters not replayed. The reconciler reads this while its
 * catch-up pass runs, beside it rather than after it: with a backlog of 1M rows the count takes
 * ~0.3 s, which after the pass would be a seventh of every 2 s period without a claim.
 */
export async function countOverdue(
  pool: pg.Pool,
  partitions: readonly number[],
  graceMs: number,
): Promise<OverdueCounts> {
  // One after the other: one pool connection, the others stay free for firing rounds and applies.
  const overdue = await pool.query<{ partition: number; n: number; age: number }>(
    `SELECT partition, count(*)::int AS n, extract(epoch FROM now() - min(due_at))::float8 AS age FROM job
     WHERE partition = ANY($1::int[]) AND phase = 0 AND state = 'SCHEDULED' AND due_at < now() - $2 * interval '1 millisecond'
     GROUP BY partition`,
    [partitions, graceMs],
  );
  const dlq = await pool.query<{ n: number; age: number | null }>(
    `SELECT count(*)::int AS n, extract(epoch FROM now() - min(dead_at))::float8 AS age
     FROM dead_letter WHERE replayed_at IS NULL`,
  );
  return {
    perPartition: new Map(overdue.rows.map((r) => [r.partition, r])),
    dlq: dlq.rows[0] ?? { n: 0, age: null },
  };
}

/**
 * Sets the overdue gauges (`sched_overdue_jobs` and the oldest overdue age, per partition) of the
 * partitions given, which the caller still owns, and the dead-letter gauges. Returns whether any
 * of those partitions has an overdue backlog.
 */
export function setOverdueGauges(
  metrics: SchedulerMetrics,
  counts: OverdueCounts,
  partitions: readonly number[],
): boolean {
  metrics.dlqSize.set(counts.dlq.n);
  metrics.dlqOldestAge.set(counts.dlq.age ?? 0);
  let any = false;
  for (const p of partitions) {
    const o = counts.perPartition.get(p);
    metrics.overdue.set({ partition: String(p) }, o?.n ?? 0);
    metrics.overdueOldestAge.set({ partition: String(p) }, Math.max(0, o?.age ?? 0));
    if ((o?.n ?? 0) > 0) any = true;
  }
  return any;
}
