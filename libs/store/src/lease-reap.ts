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
  /** How it was found: its lease lapsed, or its worker's process is gone (liveness). */
  via: 'lease' | 'worker_gone';
}

/**
 * lease_reap: DISPATCHED/RUNNING jobs of the partition whose lease ended more than `$4` ms ago
 * (clock-skew margin) go back to SCHEDULED, due now, with the lost attempt counted; those that
 * used up max_attempts go DEAD. They are found by their check time (`lease_check_at`, see
 * lease-check.ts): a job checked whose lease still runs gets its next check at the lease's end.
 * A started attempt among them gets its attempt row, LEASE_LOST (or, started before migration 008,
 * has its open row closed so).
 * SKIP LOCKED, bounded by `$3`, fenced.
 *
 * With `goneOwners` (worker ids that `workersGone` listed), RUNNING jobs of those owners whose
 * process is gone by its liveness row (it stopped beating, or a new process took over the id after
 * the job started: migration 013) are taken back the same way at once, without waiting for their
 * lease; each reaped job says which way it came (`via`). That look walks the partition's
 * dispatched and running rows, so the caller asks it once per gone process and partition.
 */
export async function leaseReap(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  limit: number,
  skewMarginMs: number,
  goneOwners: readonly string[] = [],
): Promise<ReapedJob[]> {
  const withGone = goneOwners.length > 0;
  const { rows } = await client.query<{
    job_id: string;
    due_ms: number;
    attempt: number;
    state: 'SCHEDULED' | 'DEAD';
    tenant_id: string;
    priority: number;
    via: 'lease' | 'worker_gone';
  }>({
    name: withGone ? 'lease_reap_gone' : 'lease_reap',
    text: `WITH ${FENCE_CTE},
     -- In-flight jobs whose check time has come (job_lease_idx, migration 016): their lease has
     -- lapsed, or it was renewed (heartbeats, the start) since the check was set.
     checked AS MATERIALIZED (
       SELECT job_id, state, attempt_id, attempt, version, lease_owner, lease_generation, started_at,
              lease_until < now() - $4 * interval '1 millisecond' AS is_lapsed FROM job
       WHERE partition = $1 AND phase = 1
         AND coalesce(lease_check_at, dispatched_at) < now() - $4 * interval '1 millisecond'
       ORDER BY coalesce(lease_check_at, dispatched_at)
       LIMIT $3
       FOR UPDATE SKIP LOCKED),
     lapsed AS (
       SELECT job_id, state, attempt_id, attempt, version, lease_owner, lease_generation, started_at,
              'lease' AS via FROM checked WHERE is_lapsed),
     ${
       withGone
         ? `orphaned AS (
       -- Leases still running, of a process its liveness row says is gone (lapsed ones are above).
       SELECT j.job_id, j.state, j.attempt_id, j.attempt, j.version, j.lease_owner, j.lease_generation,
              j.started_at, 'worker_gone' AS via FROM job j
       WHERE j.partition = $1 AND j.phase = 1 AND j.state = 'RUNNING' AND j.lease_owner = ANY($5::text[])
         AND j.lease_until >= now() - $4 * interval '1 millisecond'
         AND EXISTS (SELECT 1 FROM worker_liveness w WHERE w.worker_id = j.lease_owner
                     AND (w.alive_until < now() OR j.started_at < w.started_at))
       LIMIT $3
       FOR UPDATE OF j SKIP LOCKED),
     expired AS (SELECT * FROM lapsed UNION ALL SELECT * FROM orphaned),`
         : `expired AS (SELECT * FROM lapsed),`
     }
     reaped AS (
       UPDATE job j SET
         state = CASE WHEN j.max_attempts IS NOT NULL AND j.attempt >= j.max_attempts THEN 'DEAD' ELSE 'SCHEDULED' END,
         due_at = CASE WHEN j.max_attempts IS NOT NULL AND j.attempt >= j.max_attempts THEN j.due_at ELSE now() END,
         finished_at = CASE WHEN j.max_attempts IS NOT NULL AND j.attempt >= j.max_attempts THEN now() END,
         lease_owner = NULL, lease_until = NULL
       FROM fence, expired
       WHERE j.job_id = expired.job_id
       RETURNING j.job_id, ${MS_OF('j.due_at')} AS due_ms, j.attempt, j.state, j.tenant_id, j.priority, expired.via),
     -- A lease that still runs: the next look is at its end (found then only if it has lapsed by the
     -- margin). One index write per lease period for a job that outlives its first check; a job
     -- taken back above is left to that update.
     rechecked AS (
       UPDATE job j SET lease_check_at = j.lease_until
       FROM fence, checked c
       WHERE j.job_id = c.job_id AND NOT c.is_lapsed
         AND NOT EXISTS (SELECT 1 FROM expired e WHERE e.job_id = c.job_id)),
     -- A started attempt whose worker went silent ends here, as LEASE_LOST (its worker, if it comes
     -- back, finds the row and adds nothing). A dispatch never started had no attempt.
     lost AS (
       INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation, started_at, ended_at,
                            outcome, error)
       SELECT e.attempt_id, e.job_id, e.attempt, e.version, e.lease_owner, e.lease_generation, e.started_at, now(),
              'LEASE_LOST',
              CASE WHEN e.via = 'lease' THEN 'lease expired: reclaimed by the reaper'
                   ELSE 'worker gone (liveness): reclaimed by the reaper' END
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
     SELECT job_id, due_ms, attempt, state, tenant_id, priority, via FROM reaped`,
    values: withGone
      ? [partition, epoch, limit, skewMarginMs, goneOwners]
      : [partition, epoch, limit, skewMarginMs],
  });
  return rows.map((r) => ({
    jobId: r.job_id,
    dueAtMs: r.due_ms,
    attempt: r.attempt,
    state: r.state,
    tenantId: r.tenant_id,
    priority: r.priority,
    via: r.via,
  }));
}
