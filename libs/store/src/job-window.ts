import type pg from 'pg';
import { MS_OF } from './sql-ms.js';

/**
 * job_load_window: SCHEDULED jobs of a partition due before `toMs` (and at or after `fromMs`
 * when given), in keyset pages, to rebuild or extend a wheel (with each job's tenant and priority,
 * for fair firing). Reads only; no locks.
 */
export async function* jobLoadWindow(
  pool: pg.Pool,
  partition: number,
  fromMs: number | null,
  toMs: number,
  pageSize = 50_000,
): AsyncGenerator<{ jobId: string; dueAtMs: number; tenantId: string; priority: number }[]> {
  let after: { dueMs: number; jobId: string } | null = null;
  for (;;) {
    const res: pg.QueryResult<{ job_id: string; due_ms: number; tenant_id: string; priority: number }> =
      await pool.query(
        `SELECT job_id, ${MS_OF('due_at')} AS due_ms, tenant_id, priority FROM job
       WHERE partition = $1 AND phase = 0 AND state = 'SCHEDULED'
         AND due_at < 'epoch'::timestamptz + $2 * interval '1 millisecond'
         AND ($3::bigint IS NULL OR due_at >= 'epoch'::timestamptz + $3 * interval '1 millisecond')
         AND ($4::bigint IS NULL OR (due_at, job_id) > ('epoch'::timestamptz + $4 * interval '1 millisecond', $5::text))
       ORDER BY due_at, job_id
       LIMIT $6`,
        [partition, toMs, fromMs, after?.dueMs ?? null, after?.jobId ?? null, pageSize],
      );
    const rows = res.rows;
    if (rows.length === 0) return;
    yield rows.map((r) => ({
      jobId: r.job_id,
      dueAtMs: r.due_ms,
      tenantId: r.tenant_id,
      priority: r.priority,
    }));
    const last = rows[rows.length - 1]!;
    after = { dueMs: last.due_ms, jobId: last.job_id };
    if (rows.length < pageSize) return;
  }
}
