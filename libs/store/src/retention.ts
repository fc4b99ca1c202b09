import type pg from 'pg';

/**
 * finished_job_prune: deletes up to `batch` jobs that ended (SUCCEEDED, CANCELLED, EXPIRED) more
 * than `retentionMs` ago, with their attempt rows (ON DELETE CASCADE). DEAD jobs are never pruned
 * (the dead-letter queue owns them), nor anything pending, dispatched or running. Rows another
 * transaction holds are skipped, so several schedulers can prune at once. Returns how many went.
 */
export async function pruneFinishedJobs(
  pool: pg.Pool | pg.ClientBase,
  retentionMs: number,
  batch = 5_000,
): Promise<number> {
  const res = await pool.query({
    name: 'finished_job_prune',
    text: `DELETE FROM job WHERE job_id IN (
       SELECT job_id FROM job
       WHERE state IN ('SUCCEEDED', 'CANCELLED', 'EXPIRED')
         AND finished_at < now() - $1 * interval '1 millisecond'
       ORDER BY finished_at
       LIMIT $2
       FOR UPDATE SKIP LOCKED)`,
    values: [retentionMs, batch],
  });
  return res.rowCount ?? 0;
}
