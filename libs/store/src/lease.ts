import type pg from 'pg';
import { MS_OF } from './sql-ms.js';
import { batchStatement } from './pool.js';

/** What a worker holds while it runs an attempt: the fencing token is (owner, generation). */
export interface Lease {
  jobId: string;
  attemptId: string;
  attempt: number;
  version: number;
  owner: string;
  generation: number;
  leaseUntilMs: number;
  checkpoint: unknown;
  maxAttempts: number | null;
  retryPolicy: unknown;
}

/**
 * lease_acquire: version check and lease in one conditional statement. DISPATCHED → RUNNING only
 * if the job is still at the dispatched version and attempt (not cancelled, not rescheduled, not
 * re-dispatched); bumps the lease generation; the attempt's id and start time go on the job row
 * (its attempt row is written when it ends other than by success: see migration 008). No row:
 * refused.
 */
export async function leaseAcquire(
  pool: pg.Pool | pg.ClientBase,
  a: { jobId: string; version: number; attempt: number; owner: string; ttlMs: number; attemptId: string },
): Promise<Lease | null> {
  const { rows } = await pool.query<{
    lease_generation: number;
    lease_until_ms: number;
    checkpoint: unknown;
    max_attempts: number | null;
    retry_policy: unknown;
  }>({
    name: 'lease_acquire',
    text: `UPDATE job SET state = 'RUNNING', lease_owner = $4, lease_generation = lease_generation + 1,
                      lease_until = now() + $5 * interval '1 millisecond', attempt_id = $6, started_at = now()
       WHERE job_id = $1 AND version = $2 AND attempt = $3 AND state = 'DISPATCHED'
       RETURNING lease_generation, ${MS_OF('lease_until')} AS lease_until_ms, checkpoint, max_attempts, retry_policy`,
    values: [a.jobId, a.version, a.attempt, a.owner, a.ttlMs, a.attemptId],
  });
  const r = rows[0];
  if (!r) return null;
  return {
    jobId: a.jobId,
    attemptId: a.attemptId,
    attempt: a.attempt,
    version: a.version,
    owner: a.owner,
    generation: r.lease_generation,
    leaseUntilMs: r.lease_until_ms,
    checkpoint: r.checkpoint,
    maxAttempts: r.max_attempts,
    retryPolicy: r.retry_policy,
  };
}

/**
 * lease_renew: extends the lease only while `lease_owner = me AND lease_generation = mine` and the
 * job is still RUNNING (a cancel or a reaper reclaim ends it). Optionally saves a checkpoint in the
 * same statement. Returns the new lease end, or null when the lease is lost.
 */
export async function leaseRenew(
  pool: pg.Pool,
  lease: Pick<Lease, 'jobId' | 'owner' | 'generation'>,
  ttlMs: number,
  checkpoint?: unknown,
): Promise<number | null> {
  const { rows } = await pool.query<{ until_ms: number }>({
    name: 'lease_renew',
    text: `UPDATE job SET lease_until = now() + $4 * interval '1 millisecond',
                    checkpoint = CASE WHEN $5::boolean THEN $6::jsonb ELSE checkpoint END
     WHERE job_id = $1 AND lease_owner = $2 AND lease_generation = $3 AND state = 'RUNNING'
     RETURNING ${MS_OF('lease_until')} AS until_ms`,
    values: [
      lease.jobId,
      lease.owner,
      lease.generation,
      ttlMs,
      checkpoint !== undefined,
      JSON.stringify(checkpoint ?? null),
    ],
  });
  return rows[0]?.until_ms ?? null;
}

export type AttemptOutcome = 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'TIMED_OUT';

export interface Completion {
  outcome: AttemptOutcome;
  failureClass: string | null;
  error: string | null;
  /** FAILED with a retry: the job goes back to SCHEDULED at this time. */
  retryAtMs: number | null;
  /** FAILED without a retry: dead-letter it with this fingerprint. */
  deadLetter: { fingerprint: string; poisonAfterReplays: number } | null;
  /** A lifecycle event for sched.events, written to the outbox only if the completion is accepted. */
  event?: { id: string; payload: Buffer; tenantId: string; version: number; attempt: number } | null;
}

/**
 * The `ON CONFLICT` of a dead-letter insert, shared by every path to DEAD: a job dead again after
 * a replay updates its row, and one that failed the same way (same fingerprint) after `poisonParam`
 * replays in a row is quarantined as poison.
 */
export const deadLetterUpsert = (poisonParam: string) => `ON CONFLICT (job_id) DO UPDATE SET
         dead_at = now(), failure_class = EXCLUDED.failure_class, last_error = EXCLUDED.last_error,
         attempts = EXCLUDED.attempts, replayed_at = NULL, fingerprint = EXCLUDED.fingerprint,
         -- Failed the same way again after a replay: a poison job after ${poisonParam} such replays.
         same_failure_streak = CASE WHEN dead_letter.fingerprint = EXCLUDED.fingerprint
                                    THEN dead_letter.same_failure_streak + 1 ELSE 0 END,
         quarantined = dead_letter.quarantined OR (dead_letter.fingerprint = EXCLUDED.fingerprint
                                                   AND dead_letter.same_failure_streak + 1 >= ${poisonParam}),
         quarantine_note = CASE WHEN dead_letter.fingerprint = EXCLUDED.fingerprint
                                     AND dead_letter.same_failure_streak + 1 >= ${poisonParam}
                                THEN 'failed the same way after ' || (dead_letter.same_failure_streak + 1) || ' replays'
                                ELSE dead_letter.quarantine_note END`;

/**
 * job_complete: ends the attempt under the same owner + generation check. A late completion
 * from a worker whose lease was reclaimed matches nothing and is refused (returns false), never
 * overwriting the newer attempt. Success → SUCCEEDED; failure with a retry → SCHEDULED at
 * retryAt; failure without → DEAD plus a dead_letter row (history kept in `attempt`).
 */
export async function jobComplete(
  pool: pg.Pool | pg.ClientBase,
  lease: Pick<Lease, 'jobId' | 'owner' | 'generation' | 'attemptId'>,
  c: Completion,
): Promise<boolean> {
  const nextState =
    c.outcome === 'SUCCEEDED'
      ? 'SUCCEEDED'
      : c.retryAtMs !== null
        ? 'SCHEDULED'
        : c.outcome === 'CANCELLED'
          ? 'CANCELLED'
          : 'DEAD';
  const { rows } = await pool.query<{ job_id: string }>(
    `WITH done AS (
       UPDATE job SET state = $4,
                      due_at = CASE WHEN $4 = 'SCHEDULED' THEN 'epoch'::timestamptz + $8 * interval '1 millisecond' ELSE due_at END,
                      finished_at = CASE WHEN $4 = 'SCHEDULED' THEN NULL ELSE now() END,
                      -- A success keeps its worker on the row: that is its attempt's record.
                      lease_owner = CASE WHEN $4 = 'SUCCEEDED' THEN lease_owner END, lease_until = NULL
       WHERE job_id = $1 AND lease_owner = $2 AND lease_generation = $3 AND state = 'RUNNING'
       RETURNING job_id, queue, tenant_id, attempt, version, started_at),
     att AS (
       INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation, started_at, ended_at,
                            outcome, failure_class, error, retry_at)
       SELECT $9, job_id, attempt, version, $2, $3, started_at, now(), $5, $6, $7,
              CASE WHEN $8::bigint IS NULL THEN NULL ELSE 'epoch'::timestamptz + $8 * interval '1 millisecond' END
       FROM done WHERE $5 <> 'SUCCEEDED'
       ON CONFLICT (attempt_id) DO NOTHING),
     dlq AS (
       INSERT INTO dead_letter (job_id, queue, tenant_id, failure_class, last_error, fingerprint, attempts)
       SELECT job_id, queue, tenant_id, $6, $7, $10, attempt FROM done WHERE $4 = 'DEAD'
       ${deadLetterUpsert('$11')}),
     -- The lifecycle event as an outbox record (migration 014): emitted as this one-row CTE is read.
     ev AS (
       SELECT count(sched_outbox_emit('events', job_id, $12::uuid::text, 'JobEvent', job_id, $14::int, $15::int,
                                      NULL, $16, $13::bytea)) AS n
       FROM done WHERE $12::uuid IS NOT NULL)
     SELECT job_id FROM done, ev`,
    [
      lease.jobId,
      lease.owner,
      lease.generation,
      nextState,
      c.outcome,
      c.failureClass,
      c.error,
      c.retryAtMs,
      lease.attemptId,
      c.deadLetter?.fingerprint ?? null,
      c.deadLetter?.poisonAfterReplays ?? 3,
      c.event?.id ?? null,
      c.event?.payload ?? null,
      c.event?.version ?? null,
      c.event?.attempt ?? null,
      c.event?.tenantId ?? null,
    ],
  );
  if (rows.length === 0) {
    // Record the refusal as this attempt's end, unless its end is recorded already (the reaper's).
    await attemptEnd(pool, lease, 'LEASE_LOST', `completion ${c.outcome} refused: lease no longer held`);
    return false;
  }
  return true;
}

/**
 * attempt_end: writes the attempt row of an attempt that ends without touching its job (cancelled
 * while running, or its completion refused), from what the job row holds of it. Nothing if the row
 * exists already (the reaper's LEASE_LOST) or the job has moved on to another attempt (whose
 * reclaim wrote this one's row).
 */
export async function attemptEnd(
  pool: pg.Pool | pg.ClientBase,
  lease: Pick<Lease, 'jobId' | 'owner' | 'generation' | 'attemptId'>,
  outcome: string,
  error: string | null,
): Promise<void> {
  await pool.query({
    name: 'attempt_end',
    text: `INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation, started_at, ended_at,
                          outcome, error)
     SELECT attempt_id, job_id, attempt, version, $2, $3, started_at, now(), $4, $5
     FROM job WHERE job_id = $1 AND attempt_id = $6
     ON CONFLICT (attempt_id) DO NOTHING`,
    values: [lease.jobId, lease.owner, lease.generation, outcome, error, lease.attemptId],
  });
}

/** job_state: the current state and version (for `ctx.isCancelled()`). */
export async function jobState(
  pool: pg.Pool,
  jobId: string,
): Promise<{ state: string; version: number } | null> {
  const { rows } = await pool.query<{ state: string; version: number }>(
    'SELECT state, version FROM job WHERE job_id = $1',
    [jobId],
  );
  return rows[0] ?? null;
}

/**
 * Which refused starts may only have been early, and are worth asking again. The dispatch record
 * can reach a worker before the transaction that wrote it is visible to other sessions (logical
 * decoding streams a transaction once its commit record is flushed, a moment before the committing
 * backend marks it visible; on a loaded machine that moment stretches). Such a start sees the job
 * missing (dispatched by its create) or at an earlier attempt (claimed by a round), and is refused.
 * By the time this check runs the write may have become visible, so a job that is now DISPATCHED at
 * exactly the requested version and attempt counts too: nothing but visibility can have refused
 * it. Any other refusal (cancelled, rescheduled, started already, finished) is final.
 */
export async function startsToAskAgain(
  pool: pg.Pool | pg.ClientBase,
  requests: readonly Pick<LeaseRequest, 'jobId' | 'version' | 'attempt'>[],
): Promise<Set<string>> {
  if (requests.length === 0) return new Set();
  const { rows } = await pool.query<{
    job_id: string;
    attempt: number | null;
    version: number | null;
    state: string | null;
  }>(
    batchStatement(
      'start_ask_again',
      `SELECT r.job_id, j.attempt, j.version, j.state
       FROM unnest($1::text[]) AS r(job_id) LEFT JOIN job j ON j.job_id = r.job_id`,
      [requests.map((r) => r.jobId)],
      requests.length,
    ),
  );
  const seen = new Map(rows.map((r) => [r.job_id, r]));
  const out = new Set<string>();
  for (const r of requests) {
    const j = seen.get(r.jobId);
    if (!j || j.attempt === null) out.add(r.jobId);
    else if (j.attempt < r.attempt) out.add(r.jobId);
    else if (j.state === 'DISPATCHED' && j.attempt === r.attempt && j.version === r.version) out.add(r.jobId);
  }
  return out;
}

/*
 * Plans of the batched start and success statements. Each is one `UPDATE job … FROM` the request
 * list, sorted by job id, joined by key: on a table of any size, a nested loop that looks each job
 * up in job_pkey in job-id order (so two overlapping batches lock in the same order; checked on
 * 100k rows the statistics had not seen). Only a table of a few pages is scanned instead, since the
 * planner prices a scan by the table's real size, whatever its statistics say (a deadlock between
 * two overlapping batches there is retried by the worker). The update takes
 * each row's lock itself; if a row changes while the statement waits for it, Postgres re-evaluates
 * the whole condition on the newest version, so a job cancelled, rescheduled or taken by another
 * lease meanwhile is refused.
 *
 * The expected state is written `(state = 'X') IS TRUE`, which the planner cannot match against a
 * partial index's predicate. With stale statistics (a fresh table, or a burst that turns 100k jobs
 * DISPATCHED while the statistics say a few hundred) it otherwise chose to scan every DISPATCHED row
 * through job_lease_idx and hash-join (82 ms instead of 12 ms per 400 starts), or to walk the whole
 * partial index once per requested id (1.4-6.9 s per batch), which stalled a 100k burst at a few
 * hundred starts a second. The update is not also filtered by `job_id = ANY(...)`: with both, the
 * plan was a nested loop whose every inner rescan re-prepared (sorted) the whole id array,
 * quadratic in the batch (48 ms for 256 starts in a drain). The cross-partition claim (job-claim.ts)
 * looks its rows up first: it must skip rows another transaction holds (`SKIP LOCKED`), which an
 * UPDATE cannot.
 */

/** One start a worker asks for in a batch (see `leaseAcquireMany`). */
export interface LeaseRequest {
  jobId: string;
  version: number;
  attempt: number;
  attemptId: string;
}

/**
 * lease_acquire for many dispatch records in one statement (one round trip, one commit): the same
 * per-job condition as `leaseAcquire` (DISPATCHED at the dispatched version and attempt), the same
 * generation bump, attempt id and start time on the job row. Returns the leases granted, keyed by
 * attempt id; a request missing from the map was refused. All requests share one owner and TTL. A
 * job asked for twice in one batch is granted once.
 */
export async function leaseAcquireMany(
  pool: pg.Pool | pg.ClientBase,
  owner: string,
  ttlMs: number,
  requests: readonly LeaseRequest[],
): Promise<Map<string, Lease>> {
  const granted = new Map<string, Lease>();
  if (requests.length === 0) return granted;
  const { rows } = await pool.query<{
    attempt_id: string;
    lease_generation: number;
    lease_until_ms: number;
    checkpoint: unknown;
    max_attempts: number | null;
    retry_policy: unknown;
  }>(
    batchStatement(
      'lease_acquire_many',
      `UPDATE job j SET state = 'RUNNING', lease_owner = $5, lease_generation = j.lease_generation + 1,
                        lease_until = now() + $6 * interval '1 millisecond', attempt_id = r.attempt_id,
                        started_at = now()
     FROM (SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::uuid[]) AS u(job_id, version, attempt, attempt_id)
           ORDER BY job_id) r
     WHERE j.job_id = r.job_id AND j.version = r.version AND j.attempt = r.attempt
       AND (j.state = 'DISPATCHED') IS TRUE
     RETURNING r.attempt_id, j.lease_generation, ${MS_OF('j.lease_until')} AS lease_until_ms, j.checkpoint,
               j.max_attempts, j.retry_policy`,
      [
        requests.map((r) => r.jobId),
        requests.map((r) => r.version),
        requests.map((r) => r.attempt),
        requests.map((r) => r.attemptId),
        owner,
        ttlMs,
      ],
      requests.length,
    ),
  );
  const byAttempt = new Map(requests.map((r) => [r.attemptId, r]));
  for (const r of rows) {
    const q = byAttempt.get(r.attempt_id);
    if (!q) continue;
    granted.set(r.attempt_id, {
      jobId: q.jobId,
      attemptId: q.attemptId,
      attempt: q.attempt,
      version: q.version,
      owner,
      generation: r.lease_generation,
      leaseUntilMs: r.lease_until_ms,
      checkpoint: r.checkpoint,
      maxAttempts: r.max_attempts,
      retryPolicy: r.retry_policy,
    });
  }
  return granted;
}

/** One success to record in a batch (see `jobSucceedMany`). */
export interface SuccessReport {
  lease: Pick<Lease, 'jobId' | 'owner' | 'generation' | 'attemptId'>;
  /** A SUCCEEDED lifecycle event, written only if the completion is accepted. */
  event?: Completion['event'];
}

/**
 * job_complete(SUCCEEDED) for many attempts in one statement, under the same owner + generation
 * fence as `jobComplete`: each accepted report ends its job (which keeps the attempt's id, worker
 * and start time: a success writes no attempt row) and writes its event; a refused one (lease
 * reclaimed) gets its attempt row as LEASE_LOST, as `jobComplete` does. Returns the attempt ids
 * that were accepted.
 */
export async function jobSucceedMany(
  pool: pg.Pool | pg.ClientBase,
  reports: readonly SuccessReport[],
): Promise<Set<string>> {
  if (reports.length === 0) return new Set();
  const ev = reports.map((r) => r.event ?? null);
  const { rows } = await pool.query<{ attempt_id: string }>(
    batchStatement(
      'job_succeed_many',
      `WITH rep AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::uuid[], $5::uuid[], $6::bytea[], $7::int[],
                            $8::int[], $9::text[])
         AS r(job_id, owner, generation, attempt_id, event_id, event_payload, event_version, event_attempt,
              event_tenant)),
     done AS (
       UPDATE job j SET state = 'SUCCEEDED', finished_at = now(), lease_until = NULL
       FROM (SELECT * FROM rep ORDER BY job_id) r
       WHERE j.job_id = r.job_id AND j.lease_owner = r.owner AND j.lease_generation = r.generation
         AND (j.state = 'RUNNING') IS TRUE
       RETURNING r.*),
     refused AS (
       -- The (usually empty) list of refused reports, each looked up by key (OFFSET 0: never by a
       -- scan), recorded unless the attempt's end is recorded already.
       INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation, started_at, ended_at,
                            outcome, error)
       SELECT j.attempt_id, j.job_id, j.attempt, j.version, f.owner, f.generation, j.started_at, now(), 'LEASE_LOST',
              'completion SUCCEEDED refused: lease no longer held'
       FROM (SELECT * FROM rep WHERE attempt_id NOT IN (SELECT attempt_id FROM done)) f
       CROSS JOIN LATERAL (
         SELECT job_id, attempt_id, attempt, version, started_at FROM job WHERE job_id = f.job_id OFFSET 0) j
       WHERE j.attempt_id = f.attempt_id
       ON CONFLICT (attempt_id) DO NOTHING),
     -- The lifecycle events as outbox records (migration 014): emitted as this one-row CTE is read.
     ev AS (
       SELECT count(sched_outbox_emit('events', job_id, event_id::text, 'JobEvent', job_id, event_version,
                                      event_attempt, NULL, event_tenant, event_payload)) AS n
       FROM done WHERE event_id IS NOT NULL)
     SELECT attempt_id FROM done, ev`,
      [
        reports.map((r) => r.lease.jobId),
        reports.map((r) => r.lease.owner),
        reports.map((r) => r.lease.generation),
        reports.map((r) => r.lease.attemptId),
        ev.map((e) => e?.id ?? null),
        ev.map((e) => e?.payload ?? null),
        ev.map((e) => e?.version ?? null),
        ev.map((e) => e?.attempt ?? null),
        ev.map((e) => e?.tenantId ?? null),
      ],
      reports.length,
    ),
  );
  return new Set(rows.map((r) => r.attempt_id));
}
