import type pg from 'pg';
import { FENCE_CTE } from './fencing.js';
import { MS_OF } from './sql-ms.js';
import { firstLeaseCheck } from './lease-check.js';
import { batchStatement } from './pool.js';
import {
  DISPATCHED_COLUMNS,
  DISPATCH_SOURCE_COLUMNS,
  dispatchRecordCtes,
  toDispatched,
  type DispatchedJob,
  type DispatchedRow,
} from './dispatch-record.js';

/** A job just moved SCHEDULED → DISPATCHED: everything a dispatch record needs. */
export interface ClaimedJob {
  jobId: string;
  tenantId: string;
  queue: string;
  version: number;
  attempt: number;
  dueAtMs: number;
  /** Database time of the claim (`now()` of the claiming transaction): never before dueAtMs. */
  claimedAtMs: number;
  payload: Buffer;
  priority: number;
  businessKey: string | null;
  executionTimeoutMs: number | null;
  headers: Record<string, string>;
  scheduleId: string | null;
  occurrenceAtMs: number | null;
}

const CLAIM_SET = `state = 'DISPATCHED', attempt = j.attempt + 1, dispatched_at = now(), claim_epoch = $2,
                   lease_owner = NULL, lease_until = now() + $4 * interval '1 millisecond',
                   lease_check_at = ${firstLeaseCheck('$4')}`;
const CLAIM_RETURNING = `RETURNING j.job_id, j.tenant_id, j.queue, j.version, j.attempt, ${MS_OF('j.due_at')} AS due_ms,
   ${MS_OF('now()')} AS claimed_ms, j.payload, j.priority, j.business_key, j.execution_timeout_ms, j.headers,
   j.schedule_id, ${MS_OF('j.occurrence_at')} AS occ_ms`;

/** A claimed row as the claim statements return it. */
export interface ClaimRow {
  job_id: string;
  tenant_id: string;
  queue: string;
  version: number;
  attempt: number;
  due_ms: number;
  claimed_ms: number;
  payload: Buffer;
  priority: number;
  business_key: string | null;
  execution_timeout_ms: number | null;
  headers: Record<string, string> | null;
  schedule_id: string | null;
  occ_ms: number | null;
}

export function toClaimed(r: ClaimRow): ClaimedJob {
  return {
    jobId: r.job_id,
    tenantId: r.tenant_id,
    queue: r.queue,
    version: r.version,
    attempt: r.attempt,
    dueAtMs: r.due_ms,
    claimedAtMs: r.claimed_ms,
    payload: r.payload,
    priority: r.priority,
    businessKey: r.business_key,
    executionTimeoutMs: r.execution_timeout_ms,
    headers: r.headers ?? {},
    scheduleId: r.schedule_id,
    occurrenceAtMs: r.occ_ms,
  };
}

/**
 * job_claim_due: SCHEDULED → DISPATCHED for the given job ids of one partition, only where the
 * job is due by database time (`due_at <= now()`: never early) and the caller's epoch is current.
 * Takes row locks on the claimed jobs until commit; the dispatch lease (`$4` ms) bounds how long
 * a dispatched-but-never-started job waits before the reaper returns it.
 * Ids not returned were cancelled, rescheduled, already claimed, or not yet due in database time.
 */
export async function jobClaimDue(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  jobIds: string[],
  dispatchLeaseMs: number,
): Promise<ClaimedJob[]> {
  if (jobIds.length === 0) return [];
  const { rows } = await client.query<ClaimRow>({
    name: 'job_claim_due',
    text: `WITH ${FENCE_CTE}
     UPDATE job j SET ${CLAIM_SET}
     FROM fence
     WHERE j.job_id = ANY($3::text[]) AND j.partition = $1 AND j.state = 'SCHEDULED' AND j.due_at <= now()
       AND (j.expires_at IS NULL OR j.expires_at > now())
     ${CLAIM_RETURNING}`,
    values: [partition, epoch, jobIds, dispatchLeaseMs],
  });
  return rows.map(toClaimed);
}

/**
 * The fenced claim of a firing round as CTEs `owners`, `target` and `claimed` (the UPDATE, returning
 * `returning`): shared by the claim that hands the rows back and the one that writes their outbox
 * rows itself. `$1`/`$2` the owned (partition, epoch) pairs, `$3` the job ids, `$4` the lease ms.
 */
const claimAcrossCtes = (returning: string, capsParam: number | null) => `owners AS (
    SELECT po.partition, po.epoch FROM partition_owner po
    JOIN unnest($1::int[], $2::bigint[]) AS o(p, e) ON po.partition = o.p AND po.epoch = o.e
    FOR KEY SHARE OF po),
  -- By primary key per id (locking, in id order), then ANY(...): no plan may walk every due row
  -- of the owned partitions (job_due_idx), which stale statistics invited and which grows with
  -- the backlog (see the note on plans in lease.ts). SKIP LOCKED: a row another transaction
  -- holds is being claimed by the reconciler's catch-up (which takes overdue rows while a
  -- backlog of wheel rounds works through them), or changed by a command whose apply updates
  -- the wheel itself; waiting for it cost a 100k burst ~90 µs per row. A skipped job that stays
  -- SCHEDULED is the reconciler's (the index is not the truth). Only rows of partitions whose epoch
  -- is current are locked: a fenced round of an old owner, still firing until it learns of the
  -- bump, locks nothing, so the new owner's round does not skip the rows it asks for (measured: a
  -- job skipped that way waited ~3.7 s for the reconciler). The lookup's own partition filter is
  -- the only one: filtered again by owners (a semi-join), a table without statistics yet (a fresh
  -- schema, a burst before autovacuum's first analyze) ran every lookup once per owned partition.
  target AS (
    SELECT j.job_id, j.partition, j.queue, j.due_at
    FROM (SELECT DISTINCT unnest($3::text[]) AS job_id ORDER BY 1) ids
    CROSS JOIN LATERAL (
      SELECT job_id, partition, state, due_at, expires_at, queue FROM job
      WHERE job_id = ids.job_id AND partition = ANY(ARRAY(SELECT partition FROM owners))
      OFFSET 0
      FOR UPDATE SKIP LOCKED) j
    -- Never dispatched past its expiry: the expiry pass (jobExpireDue) marks it EXPIRED.
    WHERE j.state = 'SCHEDULED' AND j.due_at <= now() AND (j.expires_at IS NULL OR j.expires_at > now())),
  -- Admission control: at most a queue's room (the caller's per-queue limits, a default for the
  -- rest, none when NULL) of its due jobs, oldest first; the rest wait as due backlog for the
  -- catch-up once the queue has room again. Without limits (none could bind a round), no window.
  admitted AS (${
    capsParam === null
      ? `SELECT job_id, partition FROM target`
      : `
    SELECT d.job_id, d.partition FROM (
      SELECT d.*, row_number() OVER (PARTITION BY d.queue ORDER BY d.due_at) AS nth FROM target d) d
    -- The queue's room by its position in the list (an expression: no join for the planner to pick).
    WHERE d.nth <= coalesce(($${capsParam + 1}::int[])[array_position($${capsParam}::text[], d.queue)],
                            $${capsParam + 2}::int, d.nth)`
  }),
  -- One index scan for the whole list, joined to nothing. Joined to target per row, each row's
  -- rescan re-sorted the whole id array (quadratic: 140 ms for 1,640 jobs in a burst); joined to
  -- owners, the plan scanned the whole list once per owned partition (12 scans of 2,000 ids, 22,000
  -- rows thrown away: 35 of a batch's 60 ms). The epoch is looked up per row instead.
  claimed AS (
    UPDATE job j SET state = 'DISPATCHED', attempt = j.attempt + 1, dispatched_at = now(),
                     claim_epoch = (SELECT o.epoch FROM owners o WHERE o.partition = j.partition),
                     lease_owner = NULL, lease_until = now() + $4 * interval '1 millisecond',
                     lease_check_at = ${firstLeaseCheck('$4')}
    WHERE j.job_id = ANY(ARRAY(SELECT job_id FROM admitted))
    ${returning})`;

/**
 * job_claim_due across partitions: like `jobClaimDue`, for the wheel entries of several owned
 * partitions in one statement (one round trip for a whole firing round). The ownership rows of the
 * (partition, epoch) pairs that are still current are held FOR KEY SHARE until the transaction ends
 * (an epoch bump waits for it) and fence every row; the statement also returns those partitions
 * (`current`: a pair missing from it is fenced off) and database time, so no separate pre-check is
 * needed.
 */
export async function jobClaimDueAcross(
  client: pg.ClientBase,
  owned: readonly OwnedPartition[],
  jobIds: readonly string[],
  dispatchLeaseMs: number,
  admission: ClaimAdmission = NO_ADMISSION,
): Promise<{
  nowMs: number;
  current: Set<number>;
  claimed: (ClaimedJob & { partition: number; epoch: number })[];
}> {
  const capped = isCapped(admission);
  const { rows } = await client.query<
    Partial<ClaimRow> & { now_ms: number; current: number[]; partition: number | null; epoch: number | null }
  >(
    batchStatement(
      capped ? 'job_claim_due_across_capped' : 'job_claim_due_across',
      `WITH ${claimAcrossCtes(`${CLAIM_RETURNING}, j.partition, j.claim_epoch AS epoch`, capped ? 5 : null)}
     SELECT m.now_ms, m.current, c.*
     FROM (SELECT ${MS_OF('now()')} AS now_ms, ARRAY(SELECT partition FROM owners) AS current) m
     LEFT JOIN claimed c ON true`,
      [
        owned.map((o) => o.partition),
        owned.map((o) => o.epoch),
        jobIds,
        dispatchLeaseMs,
        ...(capped ? [[...admission.queues], [...admission.rooms], admission.otherRoom] : []),
      ],
      jobIds.length,
    ),
  );
  const head = rows[0]!;
  return {
    nowMs: head.now_ms,
    current: new Set(head.current),
    claimed: rows
      .filter((r) => r.job_id != null)
      .map((r) => ({ ...toClaimed(r as ClaimRow), partition: r.partition!, epoch: r.epoch! })),
  };
}

/**
 * A firing round in one statement, and so in one implicit transaction: the fenced claim of
 * `jobClaimDueAcross`, plus an outbox record per claimed job: its Dispatch record's fields
 * (`dispatchRecordCtes`, layout 2 of migration 015, with the Confluent framing `dispatchHeader`:
 * magic byte and schema id), from which the connector's record router encodes the Avro value
 * (schemas/avro/Dispatch.avsc). One round trip instead of four (BEGIN, claim, outbox write,
 * COMMIT), and the claimed rows' payloads and headers never travel to the scheduler and back. The
 * outbox record needs no fence of its own: it is the claim's statement, under the ownership rows the
 * claim holds. The worker reads the record as any other; `idempotencyKey` is the businessKey, else
 * the job id (the router derives it).
 */
export async function jobClaimDueDispatch(
  client: pg.ClientBase | pg.Pool,
  owned: readonly OwnedPartition[],
  jobIds: readonly string[],
  dispatchLeaseMs: number,
  dispatchHeader: Buffer,
  /** How many jobs of each queue the claim may take (admission control); default: any. */
  admission: ClaimAdmission = NO_ADMISSION,
): Promise<{ nowMs: number; current: Set<number>; claimed: DispatchedJob[] }> {
  const capped = isCapped(admission);
  const { rows } = await client.query<
    { now_ms: number; current: number[] } & ({ job_id: null } | DispatchedRow)
  >(
    batchStatement(
      capped ? 'job_claim_due_dispatch_capped' : 'job_claim_due_dispatch',
      `WITH ${claimAcrossCtes(`RETURNING ${DISPATCH_SOURCE_COLUMNS}`, capped ? 6 : null)},
     ${dispatchRecordCtes('claimed', '$5')}
     SELECT m.now_ms, m.current, ${DISPATCHED_COLUMNS}
     FROM (SELECT ${MS_OF('now()')} AS now_ms, ARRAY(SELECT partition FROM owners) AS current) m
     LEFT JOIN written e ON true`,
      [
        owned.map((o) => o.partition),
        owned.map((o) => o.epoch),
        jobIds,
        dispatchLeaseMs,
        dispatchHeader,
        ...(capped ? [[...admission.queues], [...admission.rooms], admission.otherRoom] : []),
      ],
      jobIds.length,
    ),
  );
  const head = rows[0]!;
  const claimed: DispatchedJob[] = [];
  for (const r of rows) if (r.job_id !== null) claimed.push(toDispatched(r));
  return { nowMs: head.now_ms, current: new Set(head.current), claimed };
}

/**
 * Admission control's limits for one claim: at most `rooms[i]` jobs of `queues[i]`, and at most
 * `otherRoom` of any other queue (null: no limit).
 */
export interface ClaimAdmission {
  queues: readonly string[];
  rooms: readonly number[];
  otherRoom: number | null;
}

export const NO_ADMISSION: ClaimAdmission = { queues: [], rooms: [], otherRoom: null };

const isCapped = (a: ClaimAdmission): boolean => a.queues.length > 0 || a.otherRoom !== null;

/** A partition and the epoch its owner holds. */
export interface OwnedPartition {
  partition: number;
  epoch: number;
}

/**
 * job_reconcile_due: the index is not the truth, and the catch-up drain after an outage. Claims
 * up to `limit` SCHEDULED jobs of the caller's partitions that were due more than `graceMs` ago and
 * were not fired (wheel lost or missed, or an overdue backlog), highest priority first then oldest,
 * across all the partitions at once. Rows another transaction holds are skipped
 * (FOR UPDATE SKIP LOCKED), so concurrent scanners never block each other. Fenced per partition:
 * only partitions whose (partition, epoch) is current take part, and their ownership rows are
 * held FOR KEY SHARE until commit. The scheduler's catch-up no longer uses it (it reads the drain
 * order with `jobOverdueFair`, tenants in turn, and claims by id); it stays the one-statement
 * reconcile for tools and the store's tests of SKIP LOCKED and fencing.
 */
export async function jobReconcileDue(
  client: pg.ClientBase,
  owned: OwnedPartition[],
  limit: number,
  dispatchLeaseMs: number,
  graceMs: number,
): Promise<(ClaimedJob & { partition: number; epoch: number })[]> {
  if (owned.length === 0 || limit <= 0) return [];
  const { rows } = await client.query<ClaimRow & { partition: number; epoch: number }>({
    // Unnamed: a generic plan would not know the LIMIT, and this runs once per reconcile period.
    text: `WITH ${reconcileCtes} ${reconcileUpdate(`${CLAIM_RETURNING}, j.partition, owners.epoch`)}`,
    values: [owned.map((o) => o.partition), owned.map((o) => o.epoch), limit, dispatchLeaseMs, graceMs],
  });
  return rows.map((r) => ({ ...toClaimed(r), partition: r.partition, epoch: r.epoch }));
}

/**
 * `jobReconcileDue` and the outbox row of each job it claims, in one statement (so in one implicit
 * transaction, under the ownership rows the claim holds), the Dispatch record's fields emitted as a
 * firing round's (`dispatchRecordCtes`).
 */
export async function jobReconcileDueDispatch(
  client: pg.ClientBase | pg.Pool,
  owned: readonly OwnedPartition[],
  limit: number,
  dispatchLeaseMs: number,
  graceMs: number,
  dispatchHeader: Buffer,
): Promise<DispatchedJob[]> {
  if (owned.length === 0 || limit <= 0) return [];
  const { rows } = await client.query<DispatchedRow>({
    // Unnamed, as jobReconcileDue.
    text: `WITH ${reconcileCtes},
     claimed AS (${reconcileUpdate(`RETURNING ${DISPATCH_SOURCE_COLUMNS}`)}),
     ${dispatchRecordCtes('claimed', '$6')}
     SELECT ${DISPATCHED_COLUMNS} FROM written e`,
    values: [
      owned.map((o) => o.partition),
      owned.map((o) => o.epoch),
      limit,
      dispatchLeaseMs,
      graceMs,
      dispatchHeader,
    ],
  });
  return rows.map(toDispatched);
}

/** An overdue job as the catch-up plans it: enough to claim it by id and tag it. */
export interface OverdueJob {
  jobId: string;
  partition: number;
  tenantId: string;
  priority: number;
  dueAtMs: number;
}

/**
 * job_overdue_fair: up to `limit` SCHEDULED jobs of the given partitions that were due more than
 * `graceMs` ago, in the order the catch-up drains them: highest priority first (strictly, as the
 * seed asks of a recovery), and within a priority the tenants in turn (each tenant's oldest, then
 * each one's second oldest, …; ties by due time), so one tenant's large backlog does not hold back
 * another's few jobs of the same priority. Reads only: no row is locked; the caller claims the ids
 * with the fenced, SKIP LOCKED claim of a firing round, which re-checks state and due time. One
 * sort of the whole backlog per call (a window over it), so a catch-up pass reads once and claims
 * in several rounds from what it read.
 */
export async function jobOverdueFair(
  client: pg.ClientBase | pg.Pool,
  partitions: readonly number[],
  limit: number,
  graceMs: number,
  pausedQueues: readonly string[] = [],
): Promise<OverdueJob[]> {
  if (partitions.length === 0 || limit <= 0) return [];
  const { rows } = await client.query<OverdueJob>({
    // Unnamed: a generic plan would not know the LIMIT. Columns named as OverdueJob's fields.
    text: `WITH overdue AS (
       SELECT j.job_id, j.partition, j.tenant_id, j.priority, j.due_at,
              row_number() OVER (PARTITION BY j.tenant_id, j.priority ORDER BY j.due_at) AS turn
       FROM job j
       WHERE j.partition = ANY($1::int[]) AND j.phase = 0 AND j.state = 'SCHEDULED'
         AND j.due_at <= now() - $3 * interval '1 millisecond' AND (j.expires_at IS NULL OR j.expires_at > now())
         AND j.queue <> ALL($4::text[]))
     SELECT job_id AS "jobId", partition, tenant_id AS "tenantId", priority, ${MS_OF('due_at')} AS "dueAtMs"
     FROM overdue ORDER BY priority DESC, turn, due_at LIMIT $2`,
    values: [partitions, limit, graceMs, [...pausedQueues]],
  });
  return rows;
}

/** The caller's (partition, epoch) pairs `$1`/`$2` that are current, held FOR KEY SHARE (a fence). */
const OWNERS_CTE = `owners AS (
       SELECT po.partition, po.epoch FROM partition_owner po
       JOIN unnest($1::int[], $2::bigint[]) AS o(p, e) ON po.partition = o.p AND po.epoch = o.e
       FOR KEY SHARE OF po)`;

/** The reconcile's CTEs: `owners` (current pairs, held FOR KEY SHARE) and `due` (locked, SKIP LOCKED). */
const reconcileCtes = `${OWNERS_CTE},
     due AS (
       SELECT j.job_id FROM job j
       WHERE j.partition IN (SELECT partition FROM owners) AND j.phase = 0 AND j.state = 'SCHEDULED'
         AND j.due_at <= now() - $5 * interval '1 millisecond' AND (j.expires_at IS NULL OR j.expires_at > now())
       ORDER BY j.priority DESC, j.due_at
       LIMIT $3
       FOR UPDATE OF j SKIP LOCKED)`;

const reconcileUpdate = (returning: string) => `UPDATE job j
     SET state = 'DISPATCHED', attempt = j.attempt + 1, dispatched_at = now(), claim_epoch = owners.epoch,
         lease_owner = NULL, lease_until = now() + $4 * interval '1 millisecond',
         lease_check_at = ${firstLeaseCheck('$4')}
     FROM due, owners
     WHERE j.job_id = due.job_id AND j.partition = owners.partition
     ${returning}`;

/** A job the expiry pass marked EXPIRED (for its lifecycle event and the wheel). */
export interface ExpiredJob {
  jobId: string;
  partition: number;
  epoch: number;
  tenantId: string;
  queue: string;
  version: number;
  attempt: number;
}

/**
 * job_expire_due: SCHEDULED jobs of the caller's current (partition, epoch) pairs whose
 * `expires_at` has passed go EXPIRED (they were not dispatched by then, and every claim leaves
 * them alone), up to `limit`, SKIP LOCKED, fenced like a reconcile. Only overdue rows can have
 * expired (a create's expiry is after its due time), so the due index bounds the look. The caller
 * writes their EXPIRED events in the same transaction.
 */
export async function jobExpireDue(
  client: pg.ClientBase,
  owned: readonly OwnedPartition[],
  limit: number,
): Promise<ExpiredJob[]> {
  if (owned.length === 0 || limit <= 0) return [];
  const { rows } = await client.query<{
    job_id: string;
    partition: number;
    epoch: number;
    tenant_id: string;
    queue: string;
    version: number;
    attempt: number;
  }>({
    text: `WITH ${OWNERS_CTE},
     gone AS (
       SELECT j.job_id FROM job j
       WHERE j.partition IN (SELECT partition FROM owners) AND j.phase = 0 AND j.state = 'SCHEDULED'
         AND j.due_at <= now() AND j.expires_at <= now()
       LIMIT $3
       FOR UPDATE OF j SKIP LOCKED)
     UPDATE job j SET state = 'EXPIRED', finished_at = now()
     FROM gone, owners
     WHERE j.job_id = gone.job_id AND j.partition = owners.partition
     RETURNING j.job_id, j.partition, owners.epoch, j.tenant_id, j.queue, j.version, j.attempt`,
    values: [owned.map((o) => o.partition), owned.map((o) => o.epoch), limit],
  });
  return rows.map((r) => ({
    jobId: r.job_id,
    partition: r.partition,
    epoch: Number(r.epoch),
    tenantId: r.tenant_id,
    queue: r.queue,
    version: r.version,
    attempt: r.attempt,
  }));
}

/**
 * Per queue, the jobs of these partitions dispatched and not started by any worker yet (the
 * admission control's measure of a queue's depth), by the in-flight index.
 */
export async function queueUnstarted(
  client: pg.ClientBase | pg.Pool,
  partitions: readonly number[],
): Promise<Map<string, number>> {
  if (partitions.length === 0) return new Map();
  const { rows } = await client.query<{ queue: string; n: number }>({
    name: 'queue_unstarted',
    text: `SELECT queue, count(*)::int AS n FROM job
           WHERE partition = ANY($1::int[]) AND phase = 1 AND state = 'DISPATCHED' GROUP BY queue`,
    values: [[...partitions]],
  });
  return new Map(rows.map((r) => [r.queue, r.n]));
}
