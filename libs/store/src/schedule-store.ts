import type pg from 'pg';
import { FENCE_CTE } from './fencing.js';
import { MS_OF } from './sql-ms.js';

export type MisfirePolicy = 'FIRE_ONCE' | 'FIRE_ALL' | 'SKIP';
export type OverlapPolicy = 'ALLOW' | 'SKIP' | 'BUFFER_ONE' | 'CANCEL_PREVIOUS';
export type ScheduleState = 'ACTIVE' | 'PAUSED' | 'DELETED' | 'COMPLETED';
export type OccurrenceFate =
  | 'FIRED'
  | 'DST_SHIFTED'
  | 'SKIPPED'
  | 'MISSED'
  | 'COALESCED'
  | 'DST_SKIPPED'
  | 'PAUSED'
  | 'EXPIRED'
  | 'BUFFERED';

export interface ScheduleRow {
  scheduleId: string;
  tenantId: string;
  queue: string;
  payload: Buffer;
  priority: number;
  headers: Record<string, string>;
  maxAttempts: number | null;
  executionTimeoutMs: number | null;
  retryPolicy: unknown;
  cron: string | null;
  intervalMs: number | null;
  timeZone: string;
  startAtMs: number | null;
  endAtMs: number | null;
  maxRuns: number | null;
  runs: number;
  nextFireAtMs: number | null;
  misfirePolicy: MisfirePolicy;
  misfireFireAllCap: number;
  misfireDeadlineMs: number | null;
  overlapPolicy: OverlapPolicy;
  dstSkippedPolicy: 'SHIFT' | 'SKIP';
  dstRepeatedPolicy: 'FIRST' | 'LAST' | 'BOTH';
  jitterWindowMs: number;
  state: ScheduleState;
  bufferedAtMs: number | null;
  lastJobId: string | null;
  version: number;
}

const TS = (p: string) =>
  `CASE WHEN ${p}::bigint IS NULL THEN NULL ELSE 'epoch'::timestamptz + ${p}::bigint * interval '1 millisecond' END`;

const SELECT_COLS = `schedule_id, tenant_id, queue, payload, priority, headers, max_attempts, execution_timeout_ms, retry_policy,
  cron, interval_ms, time_zone, ${MS_OF('start_at')} AS start_ms, ${MS_OF('end_at')} AS end_ms, max_runs, runs,
  ${MS_OF('next_fire_at')} AS next_ms, misfire_policy, misfire_fire_all_cap, misfire_deadline_ms, overlap_policy,
  dst_skipped_policy, dst_repeated_policy, jitter_window_ms, state, ${MS_OF('buffered_at')} AS buffered_ms, last_job_id, version`;

function toRow(r: Record<string, unknown>): ScheduleRow {
  return {
    scheduleId: r.schedule_id as string,
    tenantId: r.tenant_id as string,
    queue: r.queue as string,
    payload: r.payload as Buffer,
    priority: r.priority as number,
    headers: (r.headers as Record<string, string> | null) ?? {},
    maxAttempts: r.max_attempts as number | null,
    executionTimeoutMs: r.execution_timeout_ms as number | null,
    retryPolicy: r.retry_policy,
    cron: r.cron as string | null,
    intervalMs: r.interval_ms as number | null,
    timeZone: r.time_zone as string,
    startAtMs: r.start_ms as number | null,
    endAtMs: r.end_ms as number | null,
    maxRuns: r.max_runs as number | null,
    runs: r.runs as number,
    nextFireAtMs: r.next_ms as number | null,
    misfirePolicy: r.misfire_policy as MisfirePolicy,
    misfireFireAllCap: r.misfire_fire_all_cap as number,
    misfireDeadlineMs: r.misfire_deadline_ms as number | null,
    overlapPolicy: r.overlap_policy as OverlapPolicy,
    dstSkippedPolicy: r.dst_skipped_policy as 'SHIFT' | 'SKIP',
    dstRepeatedPolicy: r.dst_repeated_policy as 'FIRST' | 'LAST' | 'BOTH',
    jitterWindowMs: r.jitter_window_ms as number,
    state: r.state as ScheduleState,
    bufferedAtMs: r.buffered_ms as number | null,
    lastJobId: r.last_job_id as string | null,
    version: r.version as number,
  };
}

/**
 * schedule_upsert: creates a schedule or replaces its definition (version bumped; optional
 * expected version), fenced. `nextFireAtMs` is computed by the caller from the rule and "now".
 * Returns the new version, or null when the expected version did not match.
 */
export async function scheduleUpsert(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  s: Omit<ScheduleRow, 'runs' | 'state' | 'bufferedAtMs' | 'lastJobId' | 'version'>,
  expectedVersion: number | null,
): Promise<number | null> {
  const { rows } = await client.query<{ version: number }>(
    `WITH ${FENCE_CTE}
     INSERT INTO schedule (schedule_id, partition, tenant_id, queue, payload, priority, headers, max_attempts,
       execution_timeout_ms, retry_policy, cron, interval_ms, time_zone, start_at, end_at, max_runs, next_fire_at,
       misfire_policy, misfire_fire_all_cap, misfire_deadline_ms, overlap_policy, dst_skipped_policy,
       dst_repeated_policy, jitter_window_ms)
     SELECT $3, $1, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, ${TS('$15')}, ${TS('$16')}, $17, ${TS('$18')},
            $19, $20, $21, $22, $23, $24, $25
     FROM fence
     ON CONFLICT (schedule_id) DO UPDATE SET
       queue = EXCLUDED.queue, payload = EXCLUDED.payload, priority = EXCLUDED.priority,
       headers = EXCLUDED.headers, max_attempts = EXCLUDED.max_attempts, execution_timeout_ms = EXCLUDED.execution_timeout_ms,
       retry_policy = EXCLUDED.retry_policy, cron = EXCLUDED.cron, interval_ms = EXCLUDED.interval_ms,
       time_zone = EXCLUDED.time_zone, start_at = EXCLUDED.start_at, end_at = EXCLUDED.end_at, max_runs = EXCLUDED.max_runs,
       next_fire_at = EXCLUDED.next_fire_at, misfire_policy = EXCLUDED.misfire_policy,
       misfire_fire_all_cap = EXCLUDED.misfire_fire_all_cap, misfire_deadline_ms = EXCLUDED.misfire_deadline_ms,
       overlap_policy = EXCLUDED.overlap_policy, dst_skipped_policy = EXCLUDED.dst_skipped_policy,
       dst_repeated_policy = EXCLUDED.dst_repeated_policy, jitter_window_ms = EXCLUDED.jitter_window_ms,
       state = CASE WHEN schedule.state = 'PAUSED' THEN 'PAUSED' ELSE 'ACTIVE' END, buffered_at = NULL,
       version = schedule.version + 1, updated_at = now()
     WHERE schedule.partition = $1 AND ($26::int IS NULL OR schedule.version = $26::int)
       -- Never another tenant's: an upsert is an update of the caller's own schedule only.
       AND schedule.tenant_id = EXCLUDED.tenant_id
     RETURNING version`,
    [
      partition,
      epoch,
      s.scheduleId,
      s.tenantId,
      s.queue,
      s.payload,
      s.priority,
      JSON.stringify(s.headers),
      s.maxAttempts,
      s.executionTimeoutMs,
      s.retryPolicy == null ? null : JSON.stringify(s.retryPolicy),
      s.cron,
      s.intervalMs,
      s.timeZone,
      s.startAtMs,
      s.endAtMs,
      s.maxRuns,
      s.nextFireAtMs,
      s.misfirePolicy,
      s.misfireFireAllCap,
      s.misfireDeadlineMs,
      s.overlapPolicy,
      s.dstSkippedPolicy,
      s.dstRepeatedPolicy,
      s.jitterWindowMs,
      expectedVersion,
    ],
  );
  return rows[0]?.version ?? null;
}

/** schedule_get: one schedule of the partition, row-locked for the caller's transaction. */
export async function scheduleGetForUpdate(
  client: pg.ClientBase,
  partition: number,
  scheduleId: string,
): Promise<ScheduleRow | null> {
  const { rows } = await client.query(
    `SELECT ${SELECT_COLS} FROM schedule WHERE schedule_id = $1 AND partition = $2 FOR UPDATE`,
    [scheduleId, partition],
  );
  return rows[0] ? toRow(rows[0] as Record<string, unknown>) : null;
}

/**
 * schedule_lock_due: ACTIVE schedules of the partition whose next occurrence is due by `untilMs`,
 * or that hold a buffered occurrence, oldest first, FOR UPDATE SKIP LOCKED, fenced.
 */
export async function scheduleLockDue(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  untilMs: number,
  limit: number,
  onlyIds: string[] | null,
): Promise<ScheduleRow[]> {
  const { rows } = await client.query(
    `WITH ${FENCE_CTE}
     SELECT ${SELECT_COLS} FROM schedule, fence
     WHERE partition = $1 AND state = 'ACTIVE'
       AND (next_fire_at <= 'epoch'::timestamptz + $3 * interval '1 millisecond' OR buffered_at IS NOT NULL)
       AND ($5::text[] IS NULL OR schedule_id = ANY($5::text[]))
     ORDER BY next_fire_at
     LIMIT $4
     FOR UPDATE OF schedule SKIP LOCKED`,
    [partition, epoch, untilMs, limit, onlyIds],
  );
  return (rows as Record<string, unknown>[]).map(toRow);
}

export interface ScheduleAdvance {
  scheduleId: string;
  nextFireAtMs: number | null;
  runsDelta: number;
  state: ScheduleState;
  lastJobId: string | null;
  bufferedAtMs: number | null;
}

/** schedule_advance: moves a schedule past the occurrences just handled, fenced. */
export async function scheduleAdvance(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  a: ScheduleAdvance,
): Promise<boolean> {
  const res = await client.query(
    `WITH ${FENCE_CTE}
     UPDATE schedule SET next_fire_at = ${TS('$4')}, runs = runs + $5, state = $6, last_job_id = $7,
                         buffered_at = ${TS('$8')}, updated_at = now()
     FROM fence WHERE schedule_id = $3 AND partition = $1`,
    [partition, epoch, a.scheduleId, a.nextFireAtMs, a.runsDelta, a.state, a.lastJobId, a.bufferedAtMs],
  );
  return res.rowCount === 1;
}

/** schedule_set_state: pause / resume / delete, fenced. Returns the ids changed. */
export async function scheduleSetState(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  scheduleIds: string[],
  from: ScheduleState[],
  to: ScheduleState,
  nextFireAtMs?: Map<string, number | null>,
): Promise<string[]> {
  const ids = scheduleIds;
  const next = ids.map((id) => (nextFireAtMs?.has(id) ? (nextFireAtMs.get(id) ?? null) : null));
  const { rows } = await client.query<{ schedule_id: string }>(
    `WITH ${FENCE_CTE}
     UPDATE schedule s SET state = $5, version = s.version + 1, updated_at = now(),
       next_fire_at = CASE WHEN $6::boolean THEN ${TS('n.next_ms')} ELSE s.next_fire_at END
     FROM fence, unnest($3::text[], $7::bigint[]) AS n(id, next_ms)
     WHERE s.schedule_id = n.id AND s.partition = $1 AND s.state = ANY($4::text[])
     RETURNING s.schedule_id`,
    [partition, epoch, ids, from, to, nextFireAtMs !== undefined, next],
  );
  return rows.map((r) => r.schedule_id);
}

export interface OccurrenceRecord {
  scheduleId: string;
  nominalAtMs: number;
  occurrenceId: string;
  fate: OccurrenceFate;
  jobId: string | null;
  localWall: string | null;
  detail: string | null;
}

/**
 * occurrence_record: writes ledger rows, fenced. A second record of the same
 * (schedule, nominal time) is a no-op, unless `upgradeBuffered` lets a BUFFERED row become FIRED.
 * Returns the keys actually written.
 */
export async function occurrenceRecord(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  recs: OccurrenceRecord[],
): Promise<Set<string>> {
  if (recs.length === 0) return new Set();
  const { rows } = await client.query<{ occurrence_id: string }>(
    `WITH ${FENCE_CTE}
     INSERT INTO occurrence (schedule_id, nominal_at, occurrence_id, fate, job_id, local_wall, detail)
     SELECT o.sid, 'epoch'::timestamptz + o.nominal_ms * interval '1 millisecond', o.oid, o.fate, o.job_id, o.wall, o.detail
     FROM fence, unnest($3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
       AS o(sid, nominal_ms, oid, fate, job_id, wall, detail)
     ON CONFLICT (schedule_id, nominal_at) DO UPDATE SET fate = EXCLUDED.fate, job_id = EXCLUDED.job_id,
       detail = EXCLUDED.detail, recorded_at = now()
       WHERE occurrence.fate = 'BUFFERED' AND EXCLUDED.fate IN ('FIRED','DST_SHIFTED','SKIPPED')
     RETURNING occurrence_id`,
    [
      partition,
      epoch,
      recs.map((r) => r.scheduleId),
      recs.map((r) => r.nominalAtMs),
      recs.map((r) => r.occurrenceId),
      recs.map((r) => r.fate),
      recs.map((r) => r.jobId),
      recs.map((r) => r.localWall),
      recs.map((r) => r.detail),
    ],
  );
  return new Set(rows.map((r) => r.occurrence_id));
}

/** schedule_load_window: ACTIVE schedules of a partition with a next occurrence before `untilMs` (wheel load). */
export async function scheduleLoadWindow(
  pool: pg.Pool,
  partition: number,
  untilMs: number,
): Promise<{ scheduleId: string; nextFireAtMs: number }[]> {
  const { rows } = await pool.query<{ schedule_id: string; next_ms: number }>(
    `SELECT schedule_id, ${MS_OF('next_fire_at')} AS next_ms FROM schedule
     WHERE partition = $1 AND state = 'ACTIVE'
       AND (next_fire_at < 'epoch'::timestamptz + $2 * interval '1 millisecond' OR buffered_at IS NOT NULL)`,
    [partition, untilMs],
  );
  return rows.map((r) => ({ scheduleId: r.schedule_id, nextFireAtMs: r.next_ms }));
}

/** occurrence_list: the ledger of one schedule, newest first. */
export async function occurrenceList(
  pool: pg.Pool,
  scheduleId: string,
  limit = 1000,
): Promise<(OccurrenceRecord & { recordedAtMs: number })[]> {
  const { rows } = await pool.query(
    `SELECT schedule_id, ${MS_OF('nominal_at')} AS nominal_ms, occurrence_id, fate, job_id, local_wall, detail,
            ${MS_OF('recorded_at')} AS recorded_ms
     FROM occurrence WHERE schedule_id = $1 ORDER BY nominal_at DESC LIMIT $2`,
    [scheduleId, limit],
  );
  return (rows as Record<string, unknown>[]).map((r) => ({
    scheduleId: r.schedule_id as string,
    nominalAtMs: r.nominal_ms as number,
    occurrenceId: r.occurrence_id as string,
    fate: r.fate as OccurrenceFate,
    jobId: r.job_id as string | null,
    localWall: r.local_wall as string | null,
    detail: r.detail as string | null,
    recordedAtMs: r.recorded_ms as number,
  }));
}

/** job_states: current state of some jobs (overlap checks). */
export async function jobStates(client: pg.ClientBase, jobIds: string[]): Promise<Map<string, string>> {
  if (jobIds.length === 0) return new Map();
  const { rows } = await client.query<{ job_id: string; state: string }>(
    'SELECT job_id, state FROM job WHERE job_id = ANY($1::text[])',
    [jobIds],
  );
  return new Map(rows.map((r) => [r.job_id, r.state]));
}
