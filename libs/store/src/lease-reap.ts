import type pg from 'pg';
import { FENCE_CTE } from './fencing.js';
import { MS_OF } from './sql-ms.js';
import { deadLetterUpsert } from './lease.js';
import { EXECUTION_TIMEOUT_GRACE_MS, pastExecutionTimeout } from './lease-check.js';

/**
 * The reaper's budgets: `maxAttempts` for a job without its own `max_attempts` (started attempts
 * whose lease was lost count against it, as failures do in the worker), and
 * `maxUnstartedDispatches`, lapses of dispatches no worker started (counted apart: they spend no
 * attempt). A job past either goes DEAD with a dead letter (`LEASE_LOST`, `NEVER_STARTED`).
 */
export interface ReapBudget {
  maxAttempts: number;
  maxUnstartedDispatches: number;
  /** Replays that died the same way again before the dead letter is quarantined (as the worker's). */
  poisonAfterReplays: number;
}

/** The worker's default attempt budget (`DEFAULT_RETRY_POLICY`), 20 unstarted dispatches, 3 replays. */
export const DEFAULT_REAP_BUDGET: ReapBudget = {
  maxAttempts: 5,
  maxUnstartedDispatches: 20,
  poisonAfterReplays: 3,
};

export interface ReapedJob {
  jobId: string;
  dueAtMs: number;
  /** Attempts that started (a never-started dispatch gives its attempt back). */
  attempt: number;
  version: number;
  state: 'SCHEDULED' | 'DEAD';
  /** Set when DEAD: the dead letter's failure class. */
  failureClass: 'LEASE_LOST' | 'NEVER_STARTED' | 'TIMEOUT' | null;
  queue: string;
  /** For the due-time index's fair firing (FireTags). */
  tenantId: string;
  priority: number;
  /**
   * How it was found: its lease lapsed, its worker's process is gone (liveness), or it ran past its
   * execution timeout (plus `EXECUTION_TIMEOUT_GRACE_MS`) whatever its heartbeats said.
   */
  via: 'lease' | 'worker_gone' | 'timeout';
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
  budget: ReapBudget = DEFAULT_REAP_BUDGET,
): Promise<ReapedJob[]> {
  const withGone = goneOwners.length > 0;
  const { rows } = await client.query<{
    job_id: string;
    due_ms: number;
    attempt: number;
    state: 'SCHEDULED' | 'DEAD';
    tenant_id: string;
    priority: number;
    via: 'lease' | 'worker_gone' | 'timeout';
    failure_class: 'LEASE_LOST' | 'NEVER_STARTED' | 'TIMEOUT' | null;
    queue: string;
    version: number;
  }>({
    name: withGone ? 'lease_reap_gone' : 'lease_reap',
    text: `WITH ${FENCE_CTE},
     -- In-flight jobs whose check time has come (job_lease_idx, migration 016): their lease has
     -- lapsed, or it was renewed (heartbeats, the start) since the check was set.
     checked AS MATERIALIZED (
       SELECT job_id, state, attempt_id, attempt, version, lease_owner, lease_generation, started_at,
              lease_until < now() - $4 * interval '1 millisecond' AS is_lapsed,
              ${pastExecutionTimeout('job')} AS is_timed_out FROM job
       WHERE partition = $1 AND phase = 1
         AND coalesce(lease_check_at, dispatched_at) < now() - $4 * interval '1 millisecond'
       ORDER BY coalesce(lease_check_at, dispatched_at)
       LIMIT $3
       FOR UPDATE SKIP LOCKED),
     -- Lapsed, or running past its execution timeout (heartbeats or not): taken back either way.
     lapsed AS (
       SELECT job_id, state, attempt_id, attempt, version, lease_owner, lease_generation, started_at,
              CASE WHEN is_timed_out THEN 'timeout' ELSE 'lease' END AS via
       FROM checked WHERE is_lapsed OR is_timed_out),
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
         : // $5 (no gone owners) is named so that its type is known.
           `expired AS (SELECT * FROM lapsed WHERE $5::text[] IS NULL),`
     }
     -- Out of budget? A started attempt whose lease was lost counts as an attempt (max_attempts, or
     -- the default $6); a dispatch no worker started gives its attempt back and counts as a lapse
     -- (at most $7 of them).
     budget AS (
       SELECT e.job_id, e.via, e.state AS was,
              CASE WHEN e.state = 'DISPATCHED'
                   THEN CASE WHEN j.lapsed_dispatches + 1 >= $7 THEN 'NEVER_STARTED' END
                   ELSE CASE WHEN j.attempt >= coalesce(j.max_attempts, $6)
                             THEN CASE WHEN e.via = 'timeout' THEN 'TIMEOUT' ELSE 'LEASE_LOST' END END
              END AS dead_class
       FROM expired e JOIN job j ON j.job_id = e.job_id),
     reaped AS (
       UPDATE job j SET
         state = CASE WHEN b.dead_class IS NOT NULL THEN 'DEAD' ELSE 'SCHEDULED' END,
         due_at = CASE WHEN b.dead_class IS NOT NULL THEN j.due_at ELSE now() END,
         finished_at = CASE WHEN b.dead_class IS NOT NULL THEN now() END,
         attempt = CASE WHEN b.was = 'DISPATCHED' THEN greatest(j.attempt - 1, 0) ELSE j.attempt END,
         lapsed_dispatches = j.lapsed_dispatches + CASE WHEN b.was = 'DISPATCHED' THEN 1 ELSE 0 END,
         lease_owner = NULL, lease_until = NULL
       FROM fence, budget b
       WHERE j.job_id = b.job_id
       RETURNING j.job_id, ${MS_OF('j.due_at')} AS due_ms, j.attempt, j.state, j.tenant_id, j.priority, b.via,
                 b.dead_class AS failure_class, j.queue, j.lapsed_dispatches, j.version),
     -- Every path to DEAD writes the dead letter (as the worker's failures do): listed, replayable,
     -- and a job that dies the same way after $8 replays is quarantined as poison.
     dlq AS (
       INSERT INTO dead_letter (job_id, queue, tenant_id, failure_class, last_error, fingerprint, attempts)
       SELECT job_id, queue, tenant_id, failure_class,
              CASE failure_class
                   WHEN 'LEASE_LOST' THEN 'lease lost on attempt ' || attempt || ': the worker died or stopped beating while it ran the job'
                   WHEN 'TIMEOUT' THEN 'ran past its execution timeout on attempt ' || attempt
                   ELSE 'dispatched ' || lapsed_dispatches || ' times and never started by a worker' END,
              failure_class, attempt
       FROM reaped WHERE failure_class IS NOT NULL
       ${deadLetterUpsert('$8')}),
     -- A lease that still runs: the next look is at its end (found then only if it has lapsed by the
     -- margin). One index write per lease period for a job that outlives its first check; a job
     -- taken back above is left to that update.
     rechecked AS (
       UPDATE job j SET lease_check_at = CASE
           WHEN j.state = 'RUNNING' AND j.execution_timeout_ms IS NOT NULL
           THEN least(j.lease_until, j.started_at + (j.execution_timeout_ms + ${EXECUTION_TIMEOUT_GRACE_MS}) * interval '1 millisecond')
           ELSE j.lease_until END
       FROM fence, checked c
       WHERE j.job_id = c.job_id AND NOT c.is_lapsed
         AND NOT EXISTS (SELECT 1 FROM expired e WHERE e.job_id = c.job_id)),
     -- A started attempt whose worker went silent ends here, as LEASE_LOST (its worker, if it comes
     -- back, finds the row and adds nothing). A dispatch never started had no attempt.
     lost AS (
       INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation, started_at, ended_at,
                            outcome, error)
       SELECT e.attempt_id, e.job_id, e.attempt, e.version, e.lease_owner, e.lease_generation, e.started_at, now(),
              CASE WHEN e.via = 'timeout' THEN 'TIMED_OUT' ELSE 'LEASE_LOST' END,
              CASE e.via WHEN 'lease' THEN 'lease expired: reclaimed by the reaper'
                         WHEN 'timeout' THEN 'ran past its execution timeout: reclaimed by the reaper'
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
     SELECT job_id, due_ms, attempt, state, tenant_id, priority, via, failure_class, queue, version FROM reaped`,
    values: [
      partition,
      epoch,
      limit,
      skewMarginMs,
      withGone ? goneOwners : null,
      budget.maxAttempts,
      budget.maxUnstartedDispatches,
      budget.poisonAfterReplays,
    ],
  });
  return rows.map((r) => ({
    jobId: r.job_id,
    dueAtMs: r.due_ms,
    attempt: r.attempt,
    state: r.state,
    tenantId: r.tenant_id,
    priority: r.priority,
    via: r.via,
    failureClass: r.failure_class,
    queue: r.queue,
    version: r.version,
  }));
}
