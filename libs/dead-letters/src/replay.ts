import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { inTransaction } from '@sched/store';

export const REPLAY_PERMISSION = 'dlq:replay';
/** Needed on top of REPLAY_PERMISSION to replay a quarantined (poison) job. */
export const REPLAY_QUARANTINED_PERMISSION = 'dlq:replay-quarantined';

export interface Caller {
  id: string;
  /** The tenant the caller acts in: only its dead letters are seen and replayed. */
  tenantId: string;
  permissions: readonly string[];
}

export type PayloadCheck = { ok: true } | { ok: false; reason: string };

/** Checks a dead letter's payload against the current schema of its queue. */
export interface PayloadValidator {
  validate(queue: string, payload: Buffer): Promise<PayloadCheck>;
}

export interface ReplayRequest {
  caller: Caller;
  jobIds: string[];
  reason: string;
  /** Replayed jobs are released at most this many per second (their due times are spaced). */
  ratePerSec: number;
  /** Attempts the replay grants each job. Default 1. */
  attempts?: number;
  /** Replay quarantined jobs too (needs REPLAY_QUARANTINED_PERMISSION). */
  includeQuarantined?: boolean;
}

export interface ReplayResult {
  auditId: string | null;
  replayed: string[];
  refused: { jobId: string; code: ReplayRefusal; reason: string }[];
}

export type ReplayRefusal = 'NOT_DEAD_LETTERED' | 'QUARANTINED' | 'INCOMPATIBLE_PAYLOAD';

export class ReplayError extends Error {
  readonly retriable = false;
  constructor(
    readonly code: 'SCHED_E_REPLAY_FORBIDDEN' | 'SCHED_E_REPLAY_REASON_REQUIRED' | 'SCHED_E_REPLAY_INVALID',
    message: string,
  ) {
    super(message);
    this.name = 'ReplayError';
  }
}

/**
 * Replays dead-lettered jobs: an explicit, authorised, audited production action.
 * - refuses without REPLAY_PERMISSION or without a reason;
 * - refuses quarantined (poison) jobs unless asked and permitted;
 * - refuses a payload the queue's current schema cannot read, saying why;
 * - keeps the job id; the job goes back to SCHEDULED with due times spaced 1/rate apart, so the
 *   scheduler's normal bounded claim path releases them at that rate (each run gets a new attempt id
 *   when a worker starts it);
 * - writes one audit row (who, what, when, why, how many) in the same transaction: it exists iff
 *   the replay happened.
 */
export async function replayDeadLetters(
  pool: pg.Pool,
  validator: PayloadValidator,
  req: ReplayRequest,
): Promise<ReplayResult> {
  if (!req.caller.permissions.includes(REPLAY_PERMISSION)) {
    throw new ReplayError(
      'SCHED_E_REPLAY_FORBIDDEN',
      `caller ${req.caller.id} lacks the ${REPLAY_PERMISSION} permission`,
    );
  }
  if (!req.reason || req.reason.trim().length < 3) {
    throw new ReplayError(
      'SCHED_E_REPLAY_REASON_REQUIRED',
      'a replay needs a reason (at least 3 characters): it goes in the audit log',
    );
  }
  if (req.includeQuarantined && !req.caller.permissions.includes(REPLAY_QUARANTINED_PERMISSION)) {
    throw new ReplayError(
      'SCHED_E_REPLAY_FORBIDDEN',
      `replaying quarantined jobs needs ${REPLAY_QUARANTINED_PERMISSION}`,
    );
  }
  if (!(req.ratePerSec > 0 && req.ratePerSec <= 100_000))
    throw new ReplayError('SCHED_E_REPLAY_INVALID', 'ratePerSec must be in (0, 100000]');
  const attempts = req.attempts ?? 1;
  if (!Number.isSafeInteger(attempts) || attempts < 1 || attempts > 100)
    throw new ReplayError('SCHED_E_REPLAY_INVALID', 'attempts must be in [1, 100]');
  if (req.jobIds.length === 0 || req.jobIds.length > 100_000)
    throw new ReplayError('SCHED_E_REPLAY_INVALID', 'give 1..100000 job ids');

  return inTransaction(pool, async (client) => {
    const { rows } = await client.query<{
      job_id: string;
      queue: string;
      payload: Buffer;
      quarantined: boolean;
      quarantine_note: string | null;
    }>(
      `SELECT d.job_id, d.queue, j.payload, d.quarantined, d.quarantine_note
       FROM dead_letter d JOIN job j USING (job_id)
       WHERE d.job_id = ANY($1::text[]) AND d.tenant_id = $2 AND j.state = 'DEAD' AND d.replayed_at IS NULL
       ORDER BY d.dead_at
       FOR UPDATE OF d, j`,
      [req.jobIds, req.caller.tenantId],
    );
    const refused: ReplayResult['refused'] = [];
    const found = new Set(rows.map((r) => r.job_id));
    for (const id of req.jobIds)
      if (!found.has(id))
        refused.push({
          jobId: id,
          code: 'NOT_DEAD_LETTERED',
          reason: 'not in the dead-letter queue (or a replay is already in flight)',
        });
    const accepted: string[] = [];
    for (const r of rows) {
      if (r.quarantined && !req.includeQuarantined) {
        refused.push({
          jobId: r.job_id,
          code: 'QUARANTINED',
          reason: `quarantined: ${r.quarantine_note ?? 'poison job'}`,
        });
        continue;
      }
      const check = await validator.validate(r.queue, r.payload);
      if (!check.ok) {
        refused.push({ jobId: r.job_id, code: 'INCOMPATIBLE_PAYLOAD', reason: check.reason });
        continue;
      }
      accepted.push(r.job_id);
    }
    if (accepted.length === 0) return { auditId: null, replayed: [], refused };

    const spacingMs = 1000 / req.ratePerSec;
    await client.query(
      `UPDATE job j SET state = 'SCHEDULED', finished_at = NULL,
                        due_at = now() + (r.ord - 1) * $2 * interval '1 millisecond',
                        max_attempts = j.attempt + $3
       FROM unnest($1::text[]) WITH ORDINALITY AS r(job_id, ord)
       WHERE j.job_id = r.job_id`,
      [accepted, spacingMs, attempts],
    );
    await client.query(
      `UPDATE dead_letter SET replay_count = replay_count + 1, replayed_at = now() WHERE job_id = ANY($1::text[])`,
      [accepted],
    );
    const auditId = randomUUID();
    await client.query(
      `INSERT INTO audit_log (audit_id, actor, action, reason, subject, count) VALUES ($1, $2, 'dlq.replay', $3, $4, $5)`,
      [
        auditId,
        req.caller.id,
        req.reason.trim(),
        JSON.stringify({ jobIds: accepted, ratePerSec: req.ratePerSec, attempts, refused }),
        accepted.length,
      ],
    );
    return { auditId, replayed: accepted, refused };
  });
}

export interface DeadLetterView {
  jobId: string;
  queue: string;
  deadAtMs: number;
  failureClass: string | null;
  lastError: string | null;
  attempts: number;
  replayCount: number;
  quarantined: boolean;
  history: {
    attemptId: string;
    attempt: number;
    workerId: string;
    outcome: string | null;
    failureClass: string | null;
    error: string | null;
    startedAtMs: number;
    endedAtMs: number | null;
  }[];
}

/** A dead letter with its full attempt history (forensics). */
/** A dead letter of `tenantId` with its attempt history; null when there is none (or another tenant's). */
export async function deadLetterGet(
  pool: pg.Pool,
  jobId: string,
  tenantId: string,
): Promise<DeadLetterView | null> {
  const d = await pool.query(
    `SELECT job_id, queue, floor(extract(epoch FROM dead_at) * 1000)::float8 AS dead_ms, failure_class, last_error, attempts, replay_count, quarantined
     FROM dead_letter WHERE job_id = $1 AND tenant_id = $2`,
    [jobId, tenantId],
  );
  const row = d.rows[0] as Record<string, unknown> | undefined;
  if (!row) return null;
  const h = await pool.query(
    `SELECT attempt_id, attempt, worker_id, outcome, failure_class, error,
            floor(extract(epoch FROM started_at) * 1000)::float8 AS s, floor(extract(epoch FROM ended_at) * 1000)::float8 AS e
     FROM attempt_history WHERE job_id = $1 ORDER BY started_at`,
    [jobId],
  );
  return {
    jobId,
    queue: row.queue as string,
    deadAtMs: row.dead_ms as number,
    failureClass: row.failure_class as string | null,
    lastError: row.last_error as string | null,
    attempts: row.attempts as number,
    replayCount: row.replay_count as number,
    quarantined: row.quarantined as boolean,
    history: (h.rows as Record<string, unknown>[]).map((a) => ({
      attemptId: a.attempt_id as string,
      attempt: a.attempt as number,
      workerId: a.worker_id as string,
      outcome: a.outcome as string | null,
      failureClass: a.failure_class as string | null,
      error: a.error as string | null,
      startedAtMs: a.s as number,
      endedAtMs: a.e as number | null,
    })),
  };
}

/** Oldest un-replayed dead letter's age in seconds (0 when the DLQ is empty). */
export async function deadLetterOldestAgeSeconds(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ age: number | null }>(
    `SELECT extract(epoch FROM now() - min(dead_at))::float8 AS age FROM dead_letter WHERE replayed_at IS NULL`,
  );
  return rows[0]?.age ?? 0;
}
