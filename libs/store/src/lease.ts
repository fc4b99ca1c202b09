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
 * re-dispatched); bumps the lease generation; records the attempt row. No row: refused.
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
    text: `WITH acquired AS (
       UPDATE job SET state = 'RUNNING', lease_owner = $4, lease_generation = lease_generation + 1,
                      lease_until = now() + $5 * interval '1 millisecond'
       WHERE job_id = $1 AND version = $2 AND attempt = $3 AND state = 'DISPATCHED'
       RETURNING job_id, attempt, version, lease_generation, lease_until, checkpoint, max_attempts, retry_policy),
     rec AS (
       INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation)
       SELECT $6, job_id, attempt, version, $4, lease_generation FROM acquired)
     SELECT lease_generation, ${MS_OF('lease_until')} AS lease_until_ms, checkpoint, max_attempts, retry_policy
     FROM acquired`,
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
 * job_complete: ends the attempt under the same owner + generation check. A late completion
 * from a worker whose lease was reclaimed matches nothing and is refused (returns false), never
 * overwriting the newer attempt. Success → SUCCEEDED; failure with a retry → SCHEDULED at
 * retryAt; failure without → DEAD plus a dead_letter row (history kept in `attempt`).
 */
export async function jobComplete(
  pool: pg.Pool,
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
                      lease_owner = NULL, lease_until = NULL
       WHERE job_id = $1 AND lease_owner = $2 AND lease_generation = $3 AND state = 'RUNNING'
       RETURNING job_id, queue, tenant_id, attempt),
     att AS (
       UPDATE attempt SET ended_at = now(), outcome = $5, failure_class = $6, error = $7,
                          retry_at = CASE WHEN $8::bigint IS NULL THEN NULL
                                          ELSE 'epoch'::timestamptz + $8 * interval '1 millisecond' END
       WHERE attempt_id = $9 AND EXISTS (SELECT 1 FROM done)),
     dlq AS (
       INSERT INTO dead_letter (job_id, queue, tenant_id, failure_class, last_error, fingerprint, attempts)
       SELECT job_id, queue, tenant_id, $6, $7, $10, attempt FROM done WHERE $4 = 'DEAD'
       ON CONFLICT (job_id) DO UPDATE SET
         dead_at = now(), failure_class = EXCLUDED.failure_class, last_error = EXCLUDED.last_error,
         attempts = EXCLUDED.attempts, replayed_at = NULL, fingerprint = EXCLUDED.fingerprint,
         -- Failed the same way again after a replay: a poison job after $11 such replays.
         same_failure_streak = CASE WHEN dead_letter.fingerprint = EXCLUDED.fingerprint
                                    THEN dead_letter.same_failure_streak + 1 ELSE 0 END,
         quarantined = dead_letter.quarantined OR (dead_letter.fingerprint = EXCLUDED.fingerprint
                                                   AND dead_letter.same_failure_streak + 1 >= $11),
         quarantine_note = CASE WHEN dead_letter.fingerprint = EXCLUDED.fingerprint
                                     AND dead_letter.same_failure_streak + 1 >= $11
                                THEN 'failed the same way after ' || (dead_letter.same_failure_streak + 1) || ' replays'
                                ELSE dead_letter.quarantine_note END),
     ev AS (
       INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, job_id, version, attempt, tenant_id)
       SELECT $12::uuid, 'events', job_id, 'JobEvent', $13::bytea, job_id, $14::int, $15::int, $16
       FROM done WHERE $12::uuid IS NOT NULL)
     SELECT job_id FROM done`,
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
    // Record the refusal on the attempt row for forensics (only this worker's own row).
    await pool.query(
      `UPDATE attempt SET ended_at = now(), outcome = 'LEASE_LOST', error = $2 WHERE attempt_id = $1 AND ended_at IS NULL`,
      [lease.attemptId, `completion ${c.outcome} refused: lease no longer held`],
    );
    return false;
  }
  return true;
}

/** attempt_end: closes an attempt row without touching the job (cancelled while running). */
export async function attemptEnd(
  pool: pg.Pool,
  attemptId: string,
  outcome: string,
  error: string | null,
): Promise<void> {
  await pool.query(
    'UPDATE attempt SET ended_at = now(), outcome = $2, error = $3 WHERE attempt_id = $1 AND ended_at IS NULL',
    [attemptId, outcome, error],
  );
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
 * Plans of the batched statements (here and the cross-partition claim). Each job is looked up by
 * primary key (a LATERAL subquery per requested id, in job-id order, locking it; its only condition
 * is the key, and `OFFSET 0` keeps the planner from pushing the state test into it, so no partial
 * index on a state qualifies) and then updated by `job_id = ANY(...)`: no plan may walk the rows in
 * a state. With stale statistics (a fresh table, or a burst that turns
 * 100k jobs DISPATCHED while the statistics say a few hundred) the planner otherwise chose to scan
 * every DISPATCHED row through job_lease_idx and hash-join (82 ms instead of 12 ms per 400 starts), or
 * to walk the whole partial index once per requested id (1.4-6.9 s per batch), which stalled a 100k
 * burst at a few hundred starts a second. The update is not joined back to the looked-up rows: with
 * `j.job_id = t.job_id AND j.job_id = ANY(...)` the plan was a nested loop whose every inner rescan
 * re-prepared (sorted) the whole id array, quadratic in the batch (48 ms for 256 starts in a drain,
 * where the lookups took 1 ms).
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
 * generation bump and attempt row. Returns the leases granted, keyed by attempt id; a request
 * missing from the map was refused. All requests share one owner and TTL. Rows are locked in
 * job-id order, so two batches that overlap cannot deadlock each other; the lock taken by the
 * lookup holds until commit, so the update needs no second state check.
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
      `WITH req AS (
       SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::uuid[]) AS r(job_id, version, attempt, attempt_id)),
     -- Locked and checked here, so every target row is updated below: the attempt rows and the
     -- answer come from target (its values are those before the update, hence generation + 1;
     -- now() is the same all through the transaction), and the update is one index scan over the
     -- list, joined to nothing (see the note on plans above).
     target AS (
       SELECT DISTINCT ON (j.job_id) j.*, r.attempt_id
       FROM (SELECT * FROM req ORDER BY job_id) r
       CROSS JOIN LATERAL (
         SELECT job_id, version, attempt, state, lease_generation, checkpoint, max_attempts, retry_policy
         FROM job WHERE job_id = r.job_id OFFSET 0 FOR UPDATE) j
       WHERE j.version = r.version AND j.attempt = r.attempt AND j.state = 'DISPATCHED'
       ORDER BY j.job_id),
     acquired AS (
       UPDATE job j SET state = 'RUNNING', lease_owner = $5, lease_generation = j.lease_generation + 1,
                        lease_until = now() + $6 * interval '1 millisecond'
       WHERE j.job_id = ANY(ARRAY(SELECT job_id FROM target))),
     rec AS (
       INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation)
       SELECT attempt_id, job_id, attempt, version, $5, lease_generation + 1 FROM target)
     SELECT attempt_id, lease_generation + 1 AS lease_generation,
            ${MS_OF("now() + $6 * interval '1 millisecond'")} AS lease_until_ms, checkpoint, max_attempts,
            retry_policy
     FROM target`,
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
 * fence as `jobComplete`: each accepted report ends its job and its attempt row (and writes its
 * event); a refused one (lease reclaimed) is recorded on its own attempt row as LEASE_LOST, as
 * `jobComplete` does. Returns the attempt ids that were accepted.
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
     -- Locked and checked here, so every target row is updated below (one index scan over the
     -- list, joined to nothing: see the note on plans above); what follows reads target.
     target AS (
       SELECT DISTINCT ON (r.job_id) r.* FROM (SELECT * FROM rep ORDER BY job_id) r
       CROSS JOIN LATERAL (
         SELECT lease_owner, lease_generation, state FROM job WHERE job_id = r.job_id OFFSET 0 FOR UPDATE) j
       WHERE j.lease_owner = r.owner AND j.lease_generation = r.generation AND j.state = 'RUNNING'
       ORDER BY r.job_id),
     done AS (
       UPDATE job j SET state = 'SUCCEEDED', finished_at = now(), lease_owner = NULL, lease_until = NULL
       WHERE j.job_id = ANY(ARRAY(SELECT job_id FROM target))),
     att AS (
       UPDATE attempt a SET ended_at = now(), outcome = 'SUCCEEDED'
       WHERE a.attempt_id = ANY(ARRAY(SELECT attempt_id FROM target))),
     refused AS (
       -- Looked up by key from the (usually empty) list of refused reports, so no plan can scan
       -- the attempt table to find them.
       UPDATE attempt a SET ended_at = now(), outcome = 'LEASE_LOST',
                            error = 'completion SUCCEEDED refused: lease no longer held'
       WHERE a.attempt_id = ANY(ARRAY(SELECT attempt_id FROM rep
                                      WHERE attempt_id NOT IN (SELECT attempt_id FROM target)))
         AND a.ended_at IS NULL),
     ev AS (
       INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, job_id, version, attempt, tenant_id)
       SELECT event_id, 'events', job_id, 'JobEvent', event_payload, job_id, event_version, event_attempt,
              event_tenant
       FROM target WHERE event_id IS NOT NULL)
     SELECT attempt_id FROM target`,
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
