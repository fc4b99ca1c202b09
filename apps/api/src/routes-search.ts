import type { FastifyInstance } from 'fastify';
import type { ApiContext } from './app.js';
import { parseInstant, parseQueryInstant } from './app.js';
import { ApiError } from './errors.js';

export const JOB_STATES = [
  'SCHEDULED',
  'DISPATCHED',
  'RUNNING',
  'SUCCEEDED',
  'FAILED',
  'DEAD',
  'CANCELLED',
  'EXPIRED',
] as const;
export const SCHEDULE_STATES = ['ACTIVE', 'PAUSED', 'DELETED', 'COMPLETED'] as const;

/** A page's position: the last row's sort key, opaque to the caller (base64url JSON). */
function encodeCursor(key: readonly string[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

function decodeCursor(raw: string | undefined, parts: number): string[] | null {
  if (raw === undefined || raw === '') return null;
  try {
    const key = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(key) && key.length === parts && key.every((k) => typeof k === 'string')) return key;
  } catch {
    // fall through
  }
  throw new ApiError('SCHED_E_VALIDATION', 'cursor is not one this API gave (pass nextCursor back as it is)');
}

function pageSize(raw: string | undefined): number {
  if (raw === undefined) return 100;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1 || n > 1000)
    throw new ApiError(
      'SCHED_E_VALIDATION',
      `limit must be an integer from 1 to 1000 (got ${JSON.stringify(raw)})`,
    );
  return n;
}

function oneOf<T extends string>(field: string, raw: string | undefined, allowed: readonly T[]): T | null {
  if (raw === undefined) return null;
  if (!(allowed as readonly string[]).includes(raw))
    throw new ApiError(
      'SCHED_E_VALIDATION',
      `${field} must be one of ${allowed.join(', ')} (got ${JSON.stringify(raw)})`,
    );
  return raw as T;
}

interface JobFilterInput {
  state?: string;
  queue?: string;
  dueFrom?: string | number;
  dueTo?: string | number;
  businessKey?: string;
}

/** The WHERE clause of a job filter over `$1` (tenant) … `$6`, and its parameters. */
function jobFilter(tenantId: string, f: JobFilterInput, states: readonly string[] = JOB_STATES) {
  const instantOf = (field: string, v: string | number | undefined) =>
    v === undefined ? null : typeof v === 'number' ? parseInstant(field, v) : parseQueryInstant(field, v);
  return {
    where: `tenant_id = $1
         AND ($2::text IS NULL OR state = $2)
         AND ($3::text IS NULL OR queue = $3)
         AND ($4::float8 IS NULL OR due_at >= to_timestamp($4::float8 / 1000))
         AND ($5::float8 IS NULL OR due_at < to_timestamp($5::float8 / 1000))
         AND ($6::text IS NULL OR business_key = $6)`,
    params: [
      tenantId,
      oneOf('state', f.state, states),
      f.queue ?? null,
      instantOf('dueFrom', f.dueFrom),
      instantOf('dueTo', f.dueTo),
      f.businessKey ?? null,
    ] as unknown[],
  };
}

/** Jobs a cancel can still stop. */
const CANCELLABLE = ['SCHEDULED', 'DISPATCHED', 'RUNNING'] as const;
/** The most jobs one bulk cancel sends commands for. */
const MAX_BULK_CANCEL = 10_000;

export function registerSearchRoutes(app: FastifyInstance, ctx: ApiContext): void {
  /**
   * The caller's tenant's jobs, by due time then id, filtered by state, queue, due range and business
   * key, a page at a time (`nextCursor` gives the next one; null at the end). Reads Postgres; no
   * index serves an arbitrary filter, so a page over millions of rows costs a scan (an operator's
   * read, not a hot path).
   */
  app.get<{
    Querystring: {
      state?: string;
      queue?: string;
      dueFrom?: string;
      dueTo?: string;
      businessKey?: string;
      limit?: string;
      cursor?: string;
    };
  }>('/v1/jobs', async (req) => {
    const caller = ctx.caller(req);
    const q = req.query;
    const filter = jobFilter(caller.tenantId, q);
    const limit = pageSize(q.limit);
    const after = decodeCursor(q.cursor, 2);
    const { rows } = await ctx.pool.query<Record<string, unknown> & { due_key: string }>(
      `SELECT job_id AS "jobId", tenant_id AS "tenantId", queue, state, version, attempt, due_at AS "dueAt",
              priority, business_key AS "businessKey", schedule_id AS "scheduleId",
              dispatched_at AS "dispatchedAt", finished_at AS "finishedAt", created_at AS "createdAt",
              due_at::text AS due_key
       FROM job
       WHERE ${filter.where}
         AND ($7::timestamptz IS NULL OR (due_at, job_id) > ($7::timestamptz, $8::text))
       ORDER BY due_at, job_id
       LIMIT $9`,
      [...filter.params, after?.[0] ?? null, after?.[1] ?? null, limit],
    );
    const last = rows.at(-1);
    return {
      jobs: rows.map(({ due_key: _key, ...job }) => job),
      nextCursor: rows.length === limit && last ? encodeCursor([last.due_key, String(last.jobId)]) : null,
    };
  });

  /**
   * Cancels the tenant's jobs a filter matches that a cancel can still stop (SCHEDULED, DISPATCHED,
   * RUNNING), up to 10,000 per call, each by its own CancelJob command; `dryRun` only counts. At least
   * one filter is required (no cancel-everything by accident). Answers how many matched, how many
   * commands were sent, and whether more match than one call takes.
   */
  app.post<{ Body: JobFilterInput & { dryRun?: boolean; reason?: string } }>(
    '/v1/jobs/cancel',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            state: { type: 'string', enum: [...CANCELLABLE] },
            queue: { type: 'string', minLength: 1 },
            dueFrom: { type: ['string', 'integer'] },
            dueTo: { type: ['string', 'integer'] },
            businessKey: { type: 'string', minLength: 1 },
            dryRun: { type: 'boolean' },
            reason: { type: 'string', maxLength: 500 },
          },
        },
      },
    },
    async (req) => {
      const caller = ctx.caller(req);
      const b = req.body;
      if ([b.state, b.queue, b.dueFrom, b.dueTo, b.businessKey].every((v) => v === undefined))
        throw new ApiError(
          'SCHED_E_VALIDATION',
          'a bulk cancel needs at least one filter (state, queue, dueFrom, dueTo, businessKey)',
        );
      const filter = jobFilter(caller.tenantId, b, CANCELLABLE);
      const { rows } = await ctx.pool.query<{ job_id: string; matched: number }>(
        `SELECT job_id, count(*) OVER ()::int AS matched FROM job
         WHERE ${filter.where} AND state = ANY($7::text[])
         ORDER BY due_at, job_id LIMIT $8`,
        [...filter.params, [...CANCELLABLE], MAX_BULK_CANCEL],
      );
      const matched = rows[0]?.matched ?? 0;
      const answer = (sent: number) => ({
        matched,
        sent,
        more: matched > rows.length,
        jobIds: rows.slice(0, 20).map((r) => r.job_id),
      });
      if (b.dryRun === true || rows.length === 0) return answer(0);
      const cmds = rows.map((r) =>
        ctx.command(caller, {
          kind: 'CancelJob',
          value: { jobId: r.job_id, reason: b.reason ?? 'bulk cancel' },
        }),
      );
      await ctx.send(cmds);
      return answer(cmds.length);
    },
  );

  const SCHEDULE_COLUMNS = `schedule_id AS "scheduleId", tenant_id AS "tenantId", queue, state, cron,
    interval_ms::float8 AS "intervalMs", time_zone AS "timeZone", start_at AS "startAt", end_at AS "endAt",
    max_runs AS "maxRuns", runs, next_fire_at AS "nextFireAt", misfire_policy AS "misfirePolicy",
    overlap_policy AS "overlapPolicy", dst_skipped_policy AS "dstSkippedPolicy",
    dst_repeated_policy AS "dstRepeatedPolicy", jitter_window_ms::float8 AS "jitterWindowMs", priority,
    version, created_at AS "createdAt", updated_at AS "updatedAt"`;

  /** The caller's tenant's schedules, by id, filtered by state and queue, a page at a time. */
  app.get<{ Querystring: { state?: string; queue?: string; limit?: string; cursor?: string } }>(
    '/v1/schedules',
    async (req) => {
      const caller = ctx.caller(req);
      const q = req.query;
      const state = oneOf('state', q.state, SCHEDULE_STATES);
      const limit = pageSize(q.limit);
      const after = decodeCursor(q.cursor, 1);
      const { rows } = await ctx.pool.query<{ scheduleId: string }>(
        `SELECT ${SCHEDULE_COLUMNS} FROM schedule
         WHERE tenant_id = $1 AND ($2::text IS NULL OR state = $2) AND ($3::text IS NULL OR queue = $3)
           AND ($4::text IS NULL OR schedule_id > $4)
         ORDER BY schedule_id LIMIT $5`,
        [caller.tenantId, state, q.queue ?? null, after?.[0] ?? null, limit],
      );
      const last = rows.at(-1);
      return {
        schedules: rows,
        nextCursor: rows.length === limit && last ? encodeCursor([last.scheduleId]) : null,
      };
    },
  );

  /** One schedule of the caller's tenant: its rule, policies, runs and next fire time. */
  app.get<{ Params: { scheduleId: string } }>('/v1/schedules/:scheduleId', async (req) => {
    const caller = ctx.caller(req);
    const { rows } = await ctx.pool.query(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedule WHERE schedule_id = $1 AND tenant_id = $2`,
      [req.params.scheduleId, caller.tenantId],
    );
    if (rows.length === 0) throw new ApiError('SCHED_E_NOT_FOUND', `no schedule ${req.params.scheduleId}`);
    return rows[0];
  });
}
