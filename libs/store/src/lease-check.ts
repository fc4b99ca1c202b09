/**
 * When the lease reaper first looks at a job a claim puts in flight (migration 016): the end of the
 * dispatch lease, but no later than `LEASE_FIRST_CHECK_MS` after the claim. A worker's start and
 * its heartbeats move `lease_until` and leave `lease_check_at` (so they are HOT updates); the
 * reaper, finding a job whose lease still runs, moves the check to the lease's end. A lapsed lease
 * is found at its end plus the skew margin, or at the first check if that is later: a worker lease
 * shorter than this on a worker without a liveness row is taken back up to this late.
 */
export const LEASE_FIRST_CHECK_MS = 30_000;

/**
 * How long past its execution timeout a RUNNING job may go on before the reaper takes it back as
 * TIMED_OUT, whatever its heartbeats say (the worker stops renewing at the timeout itself; this is
 * the ceiling for one that does not).
 */
export const EXECUTION_TIMEOUT_GRACE_MS = 2_000;

/**
 * The claim's `lease_check_at`, for a dispatch lease of `leaseMsParam` ms (a SQL expression), and
 * no later than the job's execution timeout (`timeoutExpr`, ms or NULL) plus the grace: a job with a
 * short timeout is looked at when it could first have run past it.
 */
export const firstLeaseCheck = (leaseMsParam: string, timeoutExpr = 'j.execution_timeout_ms') =>
  `now() + least(${leaseMsParam} * interval '1 millisecond', ${LEASE_FIRST_CHECK_MS} * interval '1 millisecond',
                 coalesce((${timeoutExpr} + ${EXECUTION_TIMEOUT_GRACE_MS}) * interval '1 millisecond',
                          ${LEASE_FIRST_CHECK_MS} * interval '1 millisecond'))`;

/** When a RUNNING job with an execution timeout has run past it by the grace (a SQL condition). */
export const pastExecutionTimeout = (alias: string) =>
  `(${alias}.state = 'RUNNING' AND ${alias}.execution_timeout_ms IS NOT NULL
    AND ${alias}.started_at + (${alias}.execution_timeout_ms + ${EXECUTION_TIMEOUT_GRACE_MS}) * interval '1 millisecond' < now())`;
