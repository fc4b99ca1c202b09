import type { FastifyInstance } from 'fastify';
import type { UpsertScheduleInput } from '@sched/contracts';
import { compileRecurrence, preview, RecurrenceError, type RecurrenceSpec } from '@sched/recurrence';
import { occurrenceList } from '@sched/store';
import type { ApiContext } from './app.js';
import { parseInstant, parseQueryInstant } from './app.js';
import { ApiError } from './errors.js';
import { commandStatusUrl } from './routes-commands.js';

interface ScheduleBody {
  queue?: string;
  cron?: string;
  intervalMs?: number;
  timeZone: string;
  startAt?: string | number;
  endAt?: string | number;
  maxRuns?: number;
  payload?: unknown;
  priority?: number;
  maxAttempts?: number;
  misfirePolicy?: 'FIRE_ONCE' | 'FIRE_ALL' | 'SKIP';
  misfireFireAllCap?: number;
  misfireDeadlineMs?: number;
  overlapPolicy?: 'ALLOW' | 'SKIP' | 'BUFFER_ONE' | 'CANCEL_PREVIOUS';
  dstSkippedPolicy?: 'SHIFT' | 'SKIP';
  dstRepeatedPolicy?: 'FIRST' | 'LAST' | 'BOTH';
  jitterWindowMs?: number;
  expectedVersion?: number;
}

/** Compiles the rule now, so a bad one is a 400 with its code rather than a rejected command later. */
function checkRule(spec: RecurrenceSpec): void {
  try {
    compileRecurrence(spec);
  } catch (err) {
    if (err instanceof RecurrenceError) throw new ApiError(err.code, err.message);
    throw err;
  }
}

export function registerScheduleRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.put<{ Params: { scheduleId: string }; Body: ScheduleBody }>(
    '/v1/schedules/:scheduleId',
    {
      schema: {
        body: { type: 'object', required: ['timeZone'], properties: { timeZone: { type: 'string' } } },
      },
    },
    async (req, reply) => {
      const caller = ctx.caller(req);
      const b = req.body;
      const spec: RecurrenceSpec = {
        cron: b.cron ?? null,
        intervalMs: b.intervalMs ?? null,
        timeZone: b.timeZone,
        startAtMs: b.startAt === undefined ? null : parseInstant('startAt', b.startAt),
        endAtMs: b.endAt === undefined ? null : parseInstant('endAt', b.endAt),
        dstSkipped: b.dstSkippedPolicy ?? 'SHIFT',
        dstRepeated: b.dstRepeatedPolicy ?? 'FIRST',
      };
      checkRule(spec);
      await ctx.ownSchedule(caller, req.params.scheduleId, 'PUT /v1/schedules/:scheduleId', true);
      const value: UpsertScheduleInput = {
        scheduleId: req.params.scheduleId,
        queue: b.queue ?? 'default',
        jobTemplate: {
          payload: Buffer.from(JSON.stringify(b.payload ?? null)),
          priority: b.priority ?? 0,
          maxAttempts: b.maxAttempts ?? null,
        },
        cron: spec.cron,
        intervalMs: spec.intervalMs,
        timeZone: spec.timeZone,
        startAtMs: spec.startAtMs,
        endAtMs: spec.endAtMs,
        maxRuns: b.maxRuns ?? null,
        misfirePolicy: b.misfirePolicy ?? 'FIRE_ONCE',
        misfireFireAllCap: b.misfireFireAllCap ?? 100,
        misfireDeadlineMs: b.misfireDeadlineMs ?? null,
        overlapPolicy: b.overlapPolicy ?? 'ALLOW',
        dstSkippedPolicy: b.dstSkippedPolicy ?? 'SHIFT',
        dstRepeatedPolicy: b.dstRepeatedPolicy ?? 'FIRST',
        jitterWindowMs: b.jitterWindowMs ?? 0,
        expectedVersion: b.expectedVersion ?? null,
      };
      const cmd = ctx.command(caller, { kind: 'UpsertSchedule', value });
      await ctx.send([cmd]);
      return reply.status(202).send({
        scheduleId: req.params.scheduleId,
        commandId: cmd.commandId,
        statusUrl: commandStatusUrl(cmd.commandId),
        next: preview(spec, ctx.now(), 5),
      });
    },
  );

  for (const [verb, kind] of [
    ['pause', 'PauseSchedule'],
    ['resume', 'ResumeSchedule'],
  ] as const) {
    app.post<{ Params: { scheduleId: string } }>(`/v1/schedules/:scheduleId/${verb}`, async (req, reply) => {
      const caller = ctx.caller(req);
      await ctx.ownSchedule(caller, req.params.scheduleId, `POST /v1/schedules/:scheduleId/${verb}`);
      const cmd = ctx.command(caller, {
        kind,
        value: { scheduleId: req.params.scheduleId, reason: null },
      });
      await ctx.send([cmd]);
      return reply.status(202).send({
        scheduleId: req.params.scheduleId,
        commandId: cmd.commandId,
        statusUrl: commandStatusUrl(cmd.commandId),
      });
    });
  }

  app.delete<{ Params: { scheduleId: string } }>('/v1/schedules/:scheduleId', async (req, reply) => {
    const caller = ctx.caller(req);
    await ctx.ownSchedule(caller, req.params.scheduleId, 'DELETE /v1/schedules/:scheduleId');
    const cmd = ctx.command(caller, {
      kind: 'DeleteSchedule',
      value: { scheduleId: req.params.scheduleId, reason: null },
    });
    await ctx.send([cmd]);
    return reply.status(202).send({
      scheduleId: req.params.scheduleId,
      commandId: cmd.commandId,
      statusUrl: commandStatusUrl(cmd.commandId),
    });
  });

  /** The occurrence ledger of a schedule, newest first, with counts per fate. */
  app.get<{ Params: { scheduleId: string }; Querystring: { limit?: number } }>(
    '/v1/schedules/:scheduleId/occurrences',
    async (req) => {
      const caller = ctx.caller(req);
      await ctx.ownSchedule(caller, req.params.scheduleId, 'GET /v1/schedules/:scheduleId/occurrences');
      const list = await occurrenceList(
        ctx.pool,
        req.params.scheduleId,
        Math.min(Number(req.query.limit ?? 100), 1000),
      );
      const fates: Record<string, number> = {};
      for (const o of list) fates[o.fate] = (fates[o.fate] ?? 0) + 1;
      return { scheduleId: req.params.scheduleId, fates, occurrences: list };
    },
  );

  /** The next N fire times of a rule, in UTC and local time, without creating anything. */
  app.get<{
    Querystring: {
      cron?: string;
      intervalMs?: string;
      timeZone?: string;
      from?: string;
      n?: string;
      dstSkippedPolicy?: 'SHIFT' | 'SKIP';
      dstRepeatedPolicy?: 'FIRST' | 'LAST' | 'BOTH';
    };
  }>('/v1/schedules/preview', async (req) => {
    const q = req.query;
    const spec: RecurrenceSpec = {
      cron: q.cron ?? null,
      intervalMs: q.intervalMs === undefined ? null : Number(q.intervalMs),
      timeZone: q.timeZone ?? 'UTC',
      startAtMs: null,
      endAtMs: null,
      dstSkipped: q.dstSkippedPolicy ?? 'SHIFT',
      dstRepeated: q.dstRepeatedPolicy ?? 'FIRST',
    };
    checkRule(spec);
    const n = Math.min(Math.max(Number(q.n ?? 10), 1), 1000);
    const from = q.from === undefined ? ctx.now() : parseQueryInstant('from', q.from);
    return { next: preview(spec, from, n) };
  });
}
