import type pg from 'pg';
import { FENCE_CTE } from './fencing.js';
import { MS_OF } from './sql-ms.js';

export interface ReapedJob {
  jobId: string;
  dueAtMs: number;
  attempt: number;
  state: 'SCHEDULED' | 'DEAD';
  /** For the due-time index's fair firing (FireTags). */
  tenantId: string;
  priority: number;
}

/**
 * lease_reap: DISPATCHED/RUNNING jobs of the partition whose lease ended more than `$4` ms ago
 * (clock-skew margin) go back to SCHEDULED, due now, with the lost attempt counted; those that
 * used up max_attempts go DEAD. A started attempt among them gets its attempt row, LEASE_LOST (or,
 * started before migration 008, has its open row closed so).
 * SKIP LOCKED, bounded by `$3`, fenced.
 */
export async function leaseReap(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  limit: number,
  skewMarginMs: number,
): Promise<ReapedJob[]> {
  const { rows } = await client.query<{
    job_id: string;
    due_ms: number;
    attempt: number;
    state: 'SCHEDULED' | 'DEAD';
    tenant_id: string;
    priority: number;
  }>({
    name: 'lease_reap',
    text: `WITH ${FENCE_CTE},
     expired AS (
       SELECT job_id, state, attempt_id, attempt, version, lease_owner, lease_generation, started_at FROM job
       WHERE partition = $1 AND state IN ('DISPATCHED','RUNNING')
         AND lease_until < now() - $4 * interval '1 millisecond'
       ORDER BY lease_until
       LIMIT $3
       FOR UPDATE SKIP LOCKED),
     reaped AS (
       UPDATE job j SET
         state = CASE WHEN j.max_attempts IS NOT NULL AND j.attempt >= j.max_attempts THEN 'DEAD' ELSE 'SCHEDULED' END,
         due_at = CASE WHEN j.max_attempts IS NOT NULL AND j.attempt >= j.max_attempts THEN j.due_at ELSE now() END,
         finished_at = CASE WHEN j.max_attempts IS NOT NULL AND j.attempt >= j.max_attempts THEN now() END,
         lease_owner = NULL, lease_until = NULL
       FROM fence, expired
       WHERE j.job_id = expired.job_id
       RETURNING j.job_id, ${MS_OF('j.due_at')} AS due_ms, j.attempt, j.state, j.tenant_id, j.priority),
     -- A started attempt whose worker went silent ends here, as LEASE_LOST (its worker, if it comes
     -- back, finds the row and adds nothing). A dispatch never started had no attempt.
     lost AS (
       INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation, started_at, ended_at,
                            outcome, error)
       SELECT e.attempt_id, e.job_id, e.attempt, e.version, e.lease_owner, e.lease_generation, e.started_at, now(),
              'LEASE_LOST', 'lease expired: reclaimed by the reaper'
       FROM expired e JOIN reaped r ON r.job_id = e.job_id
       WHERE e.state = 'RUNNING' AND e.attempt_id IS NOT NULL
       ON CONFLICT (attempt_id) DO NOTHING),
     -- An attempt started before migration 008 (or by a worker of an older version) wrote its row
     -- at the start and left the job row's attempt_id alone (NULL, or an earlier attempt's, whose
     -- row exists, so the insert above adds nothing): close that open row of this lease instead.
     lost_legacy AS (
       UPDATE attempt a SET ended_at = now(), outcome = 'LEASE_LOST', error = 'lease expired: reclaimed by the reaper'
       FROM expired e JOIN reaped r ON r.job_id = e.job_id
       WHERE e.state = 'RUNNING'
         AND a.job_id = e.job_id AND a.lease_generation = e.lease_generation
         AND a.ended_at IS NULL AND a.outcome IS NULL)
     SELECT job_id, due_ms, attempt, state, tenant_id, priority FROM reaped`,
    values: [partition, epoch, limit, skewMarginMs],
  });
  return rows.map((r) => ({
    jobId: r.job_id,
    dueAtMs: r.due_ms,
    attempt: r.attempt,
    state: r.state,
    tenantId: r.tenant_id,
    priority: r.priority,
  }));
}
