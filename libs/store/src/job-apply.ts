import type pg from 'pg';
import { FENCE_CTE } from './fencing.js';
import { MS, MS_OF } from './sql-ms.js';
import { firstLeaseCheck } from './lease-check.js';
import { toClaimed, type ClaimedJob, type ClaimRow } from './job-claim.js';

type CreatedRow = ClaimRow & { dispatched?: boolean };

/** What a dispatching create returns: the claim columns, for the dispatched rows only. */
const D = (expr: string) => `CASE WHEN state = 'DISPATCHED' THEN ${expr} END`;
const DISPATCHED_RETURNING = `RETURNING job_id, state = 'DISPATCHED' AS dispatched, ${D('tenant_id')} AS tenant_id,
   ${D('queue')} AS queue, ${D('version')} AS version, ${D('attempt')} AS attempt,
   ${D(MS_OF('due_at'))} AS due_ms, ${D(MS_OF('now()'))} AS claimed_ms, ${D('payload')} AS payload,
   ${D('priority')} AS priority, ${D('business_key')} AS business_key,
   ${D('execution_timeout_ms')} AS execution_timeout_ms, ${D('headers')} AS headers,
   ${D('schedule_id')} AS schedule_id, ${D(MS_OF('occurrence_at'))} AS occ_ms`;

/** A job as a CreateJob command asks for it, validated by the scheduler. */
export interface NewJob {
  jobId: string;
  tenantId: string;
  queue: string;
  dueAtMs: number;
  priority: number;
  payload: Buffer;
  businessKey: string | null;
  maxAttempts: number | null;
  retryPolicy: unknown;
  expiresAtMs: number | null;
  executionTimeoutMs: number | null;
  headers: Record<string, string>;
  scheduleId?: string | null;
  occurrenceAtMs?: number | null;
}

/**
 * command_mark_applied: records command ids for idempotent apply, fenced.
 * Returns the ids not seen before; the caller applies only those.
 */
export async function commandMarkApplied(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  marks: readonly CommandMark[],
): Promise<Set<string>> {
  if (marks.length === 0) return new Set();
  const { rows } = await client.query<{ command_id: string }>({
    name: 'command_mark_applied',
    text: `WITH ${FENCE_CTE}
     INSERT INTO command_applied (command_id, partition, tenant_id, kind, entity_id)
     SELECT c.id, $1, c.tenant, c.kind, c.entity
     FROM fence, unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS c (id, tenant, kind, entity)
     ON CONFLICT (command_id) DO NOTHING
     RETURNING command_id`,
    values: [
      partition,
      epoch,
      marks.map((m) => m.commandId),
      marks.map((m) => m.tenantId),
      marks.map((m) => m.kind),
      marks.map((m) => m.entityId),
    ],
  });
  return new Set(rows.map((r) => r.command_id));
}

/** A command the scheduler decides on: its id, tenant, kind and the job or schedule it names. */
export interface CommandMark {
  commandId: string;
  tenantId: string;
  kind: string;
  entityId: string | null;
}

/**
 * What became of commands other than `applied` (the default of their mark): `no-op` with why, or
 * `rejected` with the reason (a rejected command gets its row here; one applied before keeps it).
 */
export async function commandRecordOutcomes(
  client: pg.ClientBase,
  partition: number,
  outcomes: readonly (CommandMark & { outcome: 'no-op' | 'rejected'; detail: string })[],
): Promise<void> {
  if (outcomes.length === 0) return;
  await client.query({
    name: 'command_record_outcomes',
    text: `INSERT INTO command_applied AS a (command_id, partition, tenant_id, kind, entity_id, outcome, detail)
           SELECT c.id, $1, c.tenant, c.kind, c.entity, c.outcome, c.detail
           FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
             AS c (id, tenant, kind, entity, outcome, detail)
           ON CONFLICT (command_id) DO UPDATE SET outcome = EXCLUDED.outcome, detail = EXCLUDED.detail
             WHERE a.outcome = 'applied' AND EXCLUDED.outcome = 'no-op' AND a.applied_at = now()`,
    values: [
      partition,
      outcomes.map((o) => o.commandId),
      outcomes.map((o) => o.tenantId),
      outcomes.map((o) => o.kind),
      outcomes.map((o) => o.entityId),
      outcomes.map((o) => o.outcome),
      outcomes.map((o) => o.detail),
    ],
  });
}

export interface CommandStatus {
  commandId: string;
  status: 'pending' | 'applied' | 'no-op' | 'rejected';
  kind: string | null;
  entityId: string | null;
  detail: string | null;
  /** When it was decided on (null: pending). */
  decidedAt: string | null;
  issuedAt: string | null;
}

/**
 * A command's status for its tenant: decided on (command_applied), else sent by the API and not
 * decided on yet (`pending`), else undefined (unknown, pruned, or another tenant's).
 */
export async function commandStatus(
  pool: pg.Pool | pg.ClientBase,
  tenantId: string,
  commandId: string,
): Promise<CommandStatus | undefined> {
  const { rows } = await pool.query<{
    outcome: string | null;
    kind: string | null;
    entity_id: string | null;
    detail: string | null;
    decided_at: Date | null;
    issued_at: Date | null;
    applied_tenant: string | null;
    issued_tenant: string | null;
    applied: boolean;
  }>({
    name: 'command_status',
    text: `SELECT a.outcome, coalesce(a.kind, i.kind) AS kind, coalesce(a.entity_id, i.entity_id) AS entity_id,
                  a.detail, a.applied_at AS decided_at, i.issued_at, a.tenant_id AS applied_tenant,
                  i.tenant_id AS issued_tenant, a.command_id IS NOT NULL AS applied
           FROM (SELECT $1::text AS id) q
           LEFT JOIN command_applied a ON a.command_id = q.id
           LEFT JOIN command_issued i ON i.command_id = q.id`,
    values: [commandId],
  });
  const r = rows[0];
  if (!r || (!r.applied && r.issued_tenant === null)) return undefined;
  // A row from before migration 021 has no tenant: its issue row (if any) says whose it is.
  const owner = r.applied_tenant ?? r.issued_tenant;
  if (owner !== tenantId) return undefined;
  return {
    commandId,
    status: r.applied ? ((r.outcome ?? 'applied') as CommandStatus['status']) : 'pending',
    kind: r.kind,
    entityId: r.entity_id,
    detail: r.detail,
    decidedAt: r.decided_at?.toISOString() ?? null,
    issuedAt: r.issued_at?.toISOString() ?? null,
  };
}

/** The API's record of the commands it sent (for `pending`). */
export async function commandIssue(
  pool: pg.Pool | pg.ClientBase,
  issued: readonly (CommandMark & { callerId: string | null })[],
): Promise<void> {
  if (issued.length === 0) return;
  await pool.query({
    name: 'command_issue',
    text: `INSERT INTO command_issued (command_id, tenant_id, kind, entity_id, caller_id)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
           ON CONFLICT (command_id) DO NOTHING`,
    values: [
      issued.map((c) => c.commandId),
      issued.map((c) => c.tenantId),
      issued.map((c) => c.kind),
      issued.map((c) => c.entityId),
      issued.map((c) => c.callerId),
    ],
  });
}

/**
 * job_create_batch: inserts new SCHEDULED jobs, fenced; a job id that exists already is left
 * alone (duplicate create). Returns the ids actually created.
 */
export async function jobCreateBatch(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  jobs: NewJob[],
): Promise<Set<string>> {
  return (await jobCreateDispatching(client, partition, epoch, jobs, null)).created;
}

/**
 * job_create_batch, dispatching what is due: like `jobCreateBatch`, but a job already due in
 * database time (`due_at <= now()`, so never early) is inserted DISPATCHED (attempt 1, claimed by
 * this epoch, dispatch lease `dispatchLeaseMs`) instead of SCHEDULED: the claim a firing round
 * would make a moment later, without a second write of the row. The caller writes its outbox row
 * in the same transaction. `dispatchLeaseMs` null: every job is inserted SCHEDULED.
 */
export async function jobCreateDispatching(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  jobs: NewJob[],
  dispatchLeaseMs: number | null,
): Promise<{ created: Set<string>; dispatched: ClaimedJob[] }> {
  if (jobs.length === 0) return { created: new Set(), dispatched: [] };
  const { rows } = await client.query<CreatedRow>({
    // Two statements: creates that cannot dispatch return only their ids (a million far-future
    // creates should not carry a dozen null columns each back to the scheduler).
    name: dispatchLeaseMs === null ? 'job_create_batch' : 'job_create_dispatching',
    text: `WITH ${FENCE_CTE}
     INSERT INTO job (job_id, partition, tenant_id, queue, state, due_at, priority, payload, business_key,
                      max_attempts, retry_policy, expires_at, execution_timeout_ms, headers, schedule_id, occurrence_at,
                      attempt, dispatched_at, claim_epoch, lease_until, lease_check_at)
     SELECT c.job_id, $1, c.tenant_id, c.queue, CASE WHEN d.now_due THEN 'DISPATCHED' ELSE 'SCHEDULED' END,
            ${MS('c.due_ms')}, c.priority, c.payload, c.business_key,
            c.max_attempts, c.retry_policy, ${MS('c.expires_ms')}, c.timeout_ms, c.headers, c.schedule_id, ${MS('c.occ_ms')},
            CASE WHEN d.now_due THEN 1 ELSE 0 END, CASE WHEN d.now_due THEN now() END,
            CASE WHEN d.now_due THEN $2::bigint END,
            CASE WHEN d.now_due THEN now() + $17 * interval '1 millisecond' END,
            CASE WHEN d.now_due THEN ${firstLeaseCheck('$17', 'c.timeout_ms')} END
     FROM fence, unnest($3::text[], $4::text[], $5::text[], $6::bigint[], $7::int[], $8::bytea[], $9::text[],
                        $10::int[], $11::jsonb[], $12::bigint[], $13::bigint[], $14::jsonb[], $15::text[], $16::bigint[])
       AS c(job_id, tenant_id, queue, due_ms, priority, payload, business_key, max_attempts, retry_policy,
            expires_ms, timeout_ms, headers, schedule_id, occ_ms)
     -- Expired already (expires_at passed): created SCHEDULED, for the expiry pass (jobExpireDue).
     CROSS JOIN LATERAL (SELECT $17::bigint IS NOT NULL AND ${MS('c.due_ms')} <= now()
                                AND (c.expires_ms IS NULL OR ${MS('c.expires_ms')} > now()) AS now_due) d
     ON CONFLICT (job_id) DO NOTHING
     ${dispatchLeaseMs === null ? 'RETURNING job_id' : DISPATCHED_RETURNING}`,
    values: [
      partition,
      epoch,
      jobs.map((j) => j.jobId),
      jobs.map((j) => j.tenantId),
      jobs.map((j) => j.queue),
      jobs.map((j) => j.dueAtMs),
      jobs.map((j) => j.priority),
      jobs.map((j) => j.payload),
      jobs.map((j) => j.businessKey),
      jobs.map((j) => j.maxAttempts),
      jobs.map((j) => (j.retryPolicy == null ? null : JSON.stringify(j.retryPolicy))),
      jobs.map((j) => j.expiresAtMs),
      jobs.map((j) => j.executionTimeoutMs),
      jobs.map((j) => JSON.stringify(j.headers)),
      jobs.map((j) => j.scheduleId ?? null),
      jobs.map((j) => j.occurrenceAtMs ?? null),
      dispatchLeaseMs,
    ],
  });
  const created = new Set<string>();
  const dispatched: ClaimedJob[] = [];
  for (const r of rows) {
    created.add(r.job_id);
    if (r.dispatched === true) dispatched.push(toClaimed(r));
  }
  return { created, dispatched };
}

export interface VersionedJob {
  jobId: string;
  version: number;
  tenantId: string;
  attempt: number;
}

/**
 * job_cancel: SCHEDULED, DISPATCHED or RUNNING → CANCELLED with the version bumped, fenced.
 * A worker holding a dispatch of the old version is refused at start; a running one sees the
 * cancel on its next heartbeat. Finished or unknown jobs are left alone (not returned).
 */
export async function jobCancel(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  jobIds: string[],
): Promise<VersionedJob[]> {
  if (jobIds.length === 0) return [];
  const { rows } = await client.query<{
    job_id: string;
    version: number;
    tenant_id: string;
    attempt: number;
  }>({
    name: 'job_cancel',
    text: `WITH ${FENCE_CTE}
     UPDATE job j SET state = 'CANCELLED', version = j.version + 1, finished_at = now(),
                      lease_owner = NULL, lease_until = NULL
     FROM fence
     WHERE j.job_id = ANY($3::text[]) AND j.partition = $1 AND j.state IN ('SCHEDULED','DISPATCHED','RUNNING')
     RETURNING j.job_id, j.version, j.tenant_id, j.attempt`,
    values: [partition, epoch, jobIds],
  });
  return rows.map((r) => ({
    jobId: r.job_id,
    version: r.version,
    tenantId: r.tenant_id,
    attempt: r.attempt,
  }));
}

export interface RescheduleRequest {
  jobId: string;
  dueAtMs: number;
  expectedVersion: number | null;
}

/**
 * job_reschedule: moves a SCHEDULED or DISPATCHED (not yet started) job to a new due time,
 * bumping the version so an in-flight dispatch of the old version is refused; fenced.
 * Honours an optional expected version (optimistic concurrency). Returns the rows changed.
 */
export async function jobReschedule(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  items: RescheduleRequest[],
): Promise<(VersionedJob & { dueAtMs: number; priority: number })[]> {
  if (items.length === 0) return [];
  const { rows } = await client.query<{
    job_id: string;
    version: number;
    due_ms: number;
    tenant_id: string;
    attempt: number;
    priority: number;
  }>({
    name: 'job_reschedule',
    text: `WITH ${FENCE_CTE}
     UPDATE job j SET state = 'SCHEDULED', version = j.version + 1, due_at = ${MS('r.due_ms')},
                      lease_owner = NULL, lease_until = NULL
     FROM fence, unnest($3::text[], $4::bigint[], $5::int[]) AS r(job_id, due_ms, expected_version)
     WHERE j.job_id = r.job_id AND j.partition = $1 AND j.state IN ('SCHEDULED','DISPATCHED')
       AND (r.expected_version IS NULL OR r.expected_version = j.version)
     RETURNING j.job_id, j.version, ${MS_OF('j.due_at')} AS due_ms, j.tenant_id, j.attempt, j.priority`,
    values: [
      partition,
      epoch,
      items.map((i) => i.jobId),
      items.map((i) => i.dueAtMs),
      items.map((i) => i.expectedVersion),
    ],
  });
  return rows.map((r) => ({
    jobId: r.job_id,
    version: r.version,
    dueAtMs: r.due_ms,
    tenantId: r.tenant_id,
    attempt: r.attempt,
    priority: r.priority,
  }));
}
