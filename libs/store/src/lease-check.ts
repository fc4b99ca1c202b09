/**
 * When the lease reaper first looks at a job a claim puts in flight (migration 016): the end of the
 * dispatch lease, but no later than `LEASE_FIRST_CHECK_MS` after the claim. A worker's start and
 * its heartbeats move `lease_until` and leave `lease_check_at` (so they are HOT updates); the
 * reaper, finding a job whose lease still runs, moves the check to the lease's end. A lapsed lease
 * is found at its end plus the skew margin, or at the first check if that is later: a worker lease
 * shorter than this on a worker without a liveness row is taken back up to this late.
 */
export const LEASE_FIRST_CHECK_MS = 30_000;

/** The claim's `lease_check_at`, for a dispatch lease of `leaseMsParam` ms (a SQL expression). */
export const firstLeaseCheck = (leaseMsParam: string) =>
  `now() + least(${leaseMsParam} * interval '1 millisecond', ${LEASE_FIRST_CHECK_MS} * interval '1 millisecond')`;
