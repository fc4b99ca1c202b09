import type pg from 'pg';

/** One queue's backlog at both ends of the dispatch, as `queueDepth` counts it. */
export interface QueueDepthRow {
  queue: string;
  /** SCHEDULED jobs due more than the grace ago: the scheduler's side is behind. */
  overdue: number;
  /** How long ago the oldest of them was due, seconds (0: none). */
  oldestOverdueSeconds: number;
  /** Claimed and sent, not started by any worker yet: the dispatch topic and the workers are behind. */
  dispatched: number;
  /** How long ago the oldest of them was claimed, seconds (0: none). */
  oldestDispatchedSeconds: number;
  /** Started and not finished. */
  running: number;
}

/**
 * queue_depth: per queue, the due backlog (overdue, not yet claimed) and the queue depth (claimed,
 * not yet started; and running), with the age of the oldest job of each, in the given partitions
 * (all partitions that ever had an owner when `partitions` is null) and optionally one tenant.
 * The two backlogs point at different culprits: jobs due and not claimed are the scheduler's, jobs
 * claimed and not started are the relay's or the workers'.
 *
 * Each partition is read on its own (`job_due_idx` and `job_lease_idx` lead with the partition), so
 * the cost is the overdue and in-flight rows, never the pending ones; a large backlog still costs
 * one row read per job, so callers count now and then, not per round.
 */
export async function queueDepth(
  pool: pg.Pool | pg.ClientBase,
  opts: { partitions: number[] | null; graceMs: number; tenantId?: string },
): Promise<QueueDepthRow[]> {
  const { rows } = await pool.query<{
    queue: string;
    overdue: number;
    oldest_overdue: number | null;
    dispatched: number;
    oldest_dispatched: number | null;
    running: number;
  }>({
    name: 'queue_depth',
    text: `WITH parts AS (
       SELECT unnest(coalesce($1::int[], ARRAY(SELECT partition FROM partition_owner))) AS partition),
     overdue AS (
       SELECT j.queue, count(*)::int AS n, min(j.due_at) AS oldest
       FROM parts p CROSS JOIN LATERAL (
         SELECT queue, due_at FROM job
         WHERE partition = p.partition AND phase = 0 AND state = 'SCHEDULED' AND due_at < now() - $2 * interval '1 millisecond'
           AND ($3::text IS NULL OR tenant_id = $3)) j
       GROUP BY j.queue),
     inflight AS (
       SELECT j.queue,
              count(*) FILTER (WHERE j.state = 'DISPATCHED')::int AS dispatched,
              count(*) FILTER (WHERE j.state = 'RUNNING')::int AS running,
              min(j.dispatched_at) FILTER (WHERE j.state = 'DISPATCHED') AS oldest
       FROM parts p CROSS JOIN LATERAL (
         SELECT queue, state, dispatched_at FROM job
         WHERE partition = p.partition AND phase = 1
           AND ($3::text IS NULL OR tenant_id = $3)) j
       GROUP BY j.queue)
     SELECT coalesce(o.queue, i.queue) AS queue,
            coalesce(o.n, 0) AS overdue,
            extract(epoch FROM now() - o.oldest)::float8 AS oldest_overdue,
            coalesce(i.dispatched, 0) AS dispatched,
            extract(epoch FROM now() - i.oldest)::float8 AS oldest_dispatched,
            coalesce(i.running, 0) AS running
     FROM overdue o FULL JOIN inflight i ON i.queue = o.queue
     ORDER BY 1`,
    values: [opts.partitions, opts.graceMs, opts.tenantId ?? null],
  });
  return rows.map((r) => ({
    queue: r.queue,
    overdue: r.overdue,
    oldestOverdueSeconds: Math.max(0, r.oldest_overdue ?? 0),
    dispatched: r.dispatched,
    oldestDispatchedSeconds: Math.max(0, r.oldest_dispatched ?? 0),
    running: r.running,
  }));
}
