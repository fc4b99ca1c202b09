import type pg from 'pg';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/**
 * Sets the overdue gauges of the owned partitions (`sched_overdue_jobs`, and the oldest overdue
 * age, per partition: SCHEDULED jobs due more than `graceMs` ago) and the dead-letter gauges
 * (size and oldest age of what was not replayed). Returns whether any partition has an overdue
 * backlog. Run by the reconciler after its catch-up, so the figures are what it left.
 */
export async function refreshOverdueGauges(
  pool: pg.Pool,
  metrics: SchedulerMetrics,
  partitions: readonly number[],
  graceMs: number,
): Promise<boolean> {
  const { rows } = await pool.query<{ partition: number; n: number; age: number }>(
    `SELECT partition, count(*)::int AS n, extract(epoch FROM now() - min(due_at))::float8 AS age FROM job
     WHERE partition = ANY($1::int[]) AND state = 'SCHEDULED' AND due_at < now() - $2 * interval '1 millisecond'
     GROUP BY partition`,
    [partitions, graceMs],
  );
  const overdue = new Map(rows.map((r) => [r.partition, r]));
  const dlq = await pool.query<{ n: number; age: number | null }>(
    `SELECT count(*)::int AS n, extract(epoch FROM now() - min(dead_at))::float8 AS age
     FROM dead_letter WHERE replayed_at IS NULL`,
  );
  metrics.dlqSize.set(dlq.rows[0]?.n ?? 0);
  metrics.dlqOldestAge.set(dlq.rows[0]?.age ?? 0);
  for (const p of partitions) {
    const o = overdue.get(p);
    metrics.overdue.set({ partition: String(p) }, o?.n ?? 0);
    metrics.overdueOldestAge.set({ partition: String(p) }, Math.max(0, o?.age ?? 0));
  }
  return rows.some((r) => r.n > 0);
}
