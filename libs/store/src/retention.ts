import type pg from 'pg';

/**
 * finished_job_prune: deletes up to `batch` jobs that ended (SUCCEEDED, CANCELLED, EXPIRED) more
 * than `retentionMs` ago, with their attempt rows (in the same statement: attempts have no foreign key,
 * see migration 006) and their dead-letter rows (ON DELETE CASCADE). DEAD jobs are never pruned
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
    text: `WITH gone AS (
       DELETE FROM job WHERE job_id IN (
         SELECT job_id FROM job
         WHERE phase = 2 AND state IN ('SUCCEEDED', 'CANCELLED', 'EXPIRED')
           AND finished_at < now() - $1 * interval '1 millisecond'
         ORDER BY finished_at
         LIMIT $2
         FOR UPDATE SKIP LOCKED)
       RETURNING job_id),
     attempts AS (
       -- By key from the list (attempt_job_idx), never a scan of the attempt table.
       DELETE FROM attempt WHERE job_id = ANY(ARRAY(SELECT job_id FROM gone)))
     SELECT count(*)::int AS n FROM gone`,
    values: [retentionMs, batch],
  });
  return (res.rows[0] as { n: number } | undefined)?.n ?? 0;
}

/**
 * outbox_prune / command_applied_prune / command_issued_prune / worker_liveness_prune: delete rows older than the retention
 * (a worker's row: gone for that long), in bounded batches.
 */
export async function pruneOlderThan(
  pool: pg.Pool,
  table: 'outbox' | 'command_applied' | 'command_issued' | 'worker_liveness',
  retentionMs: number,
  batch = 10_000,
): Promise<number> {
  // The outbox has no key (migration 007): its rows are deleted by ctid, found by the age index.
  const col = {
    outbox: 'created_at',
    command_applied: 'applied_at',
    command_issued: 'issued_at',
    worker_liveness: 'alive_until',
  }[table];
  const key = {
    outbox: 'ctid',
    command_applied: 'command_id',
    command_issued: 'command_id',
    worker_liveness: 'worker_id',
  }[table];
  const res = await pool.query(
    `DELETE FROM ${table} WHERE ${key} = ANY(ARRAY(
       SELECT ${key} FROM ${table} WHERE ${col} < now() - $1 * interval '1 millisecond' LIMIT $2))`,
    [retentionMs, batch],
  );
  return res.rowCount ?? 0;
}
