import type { FastifyInstance } from 'fastify';
import type { ApiCaller, ApiContext } from './app.js';
import { parseInstant } from './app.js';
import { ApiError } from './errors.js';
import { commandStatusUrl } from './routes-commands.js';

interface JobBody {
  jobId?: string;
  queue?: string;
  dueAt: string | number;
  /** JSON payload (stored as UTF-8 JSON) … */
  payload?: unknown;
  /** … or raw bytes, base64. */
  payloadBase64?: string;
  priority?: number;
  businessKey?: string;
  maxAttempts?: number;
  jitterWindowMs?: number;
  executionTimeoutMs?: number;
  headers?: Record<string, string>;
}

const jobSchema = {
  type: 'object',
  required: ['dueAt'],
  additionalProperties: false,
  properties: {
    jobId: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' },
    queue: { type: 'string', minLength: 1, maxLength: 64 },
    dueAt: { type: ['string', 'integer'] },
    payload: {},
    payloadBase64: { type: 'string' },
    priority: { type: 'integer', minimum: -1000, maximum: 1000 },
    businessKey: { type: 'string', maxLength: 500 },
    maxAttempts: { type: 'integer', minimum: 1, maximum: 1000 },
    jitterWindowMs: { type: 'integer', minimum: 0 },
    executionTimeoutMs: { type: 'integer', minimum: 1 },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
  },
} as const;

export function registerJobRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const queues = async (names: string[]) => {
    const { rows } = await ctx.pool.query<{ queue: string }>(
      'SELECT queue FROM queue WHERE queue = ANY($1::text[])',
      [names],
    );
    const known = new Set(rows.map((r) => r.queue));
    const unknown = names.filter((q) => !known.has(q));
    if (unknown.length > 0)
      throw new ApiError('SCHED_E_UNKNOWN_QUEUE', `unknown queue(s): ${[...new Set(unknown)].join(', ')}`);
  };
  const toCommand = (caller: ApiCaller, b: JobBody) => {
    const payload =
      b.payloadBase64 !== undefined
        ? Buffer.from(b.payloadBase64, 'base64')
        : Buffer.from(JSON.stringify(b.payload ?? null));
    return ctx.command(caller, {
      kind: 'CreateJob',
      value: {
        jobId: b.jobId ?? crypto.randomUUID(),
        queue: b.queue ?? 'default',
        dueAtMs: parseInstant('dueAt', b.dueAt),
        payload,
        priority: b.priority ?? 0,
        businessKey: b.businessKey ?? null,
        maxAttempts: b.maxAttempts ?? null,
        jitterWindowMs: b.jitterWindowMs ?? 0,
        executionTimeoutMs: b.executionTimeoutMs ?? null,
        headers: b.headers ?? {},
      },
    });
  };

  /** Create one job. 202 once the command is durably on Kafka (acks=all); the scheduler applies it. */
  app.post<{ Body: JobBody }>('/v1/jobs', { schema: { body: jobSchema } }, async (req, reply) => {
    const caller = ctx.caller(req);
    await queues([req.body.queue ?? 'default']);
    const cmd = toCommand(caller, req.body);
    await ctx.send([cmd]);
    return reply.status(202).send({
      jobId: (cmd.body.value as { jobId: string }).jobId,
      commandId: cmd.commandId,
      statusUrl: commandStatusUrl(cmd.commandId),
    });
  });

  app.post<{ Body: { jobs: JobBody[] } }>(
    '/v1/jobs/batch',
    {
      schema: {
        body: {
          type: 'object',
          required: ['jobs'],
          properties: { jobs: { type: 'array', minItems: 1, maxItems: 10_000, items: jobSchema } },
        },
      },
    },
    async (req, reply) => {
      const caller = ctx.caller(req);
      await queues(req.body.jobs.map((j) => j.queue ?? 'default'));
      const cmds = req.body.jobs.map((j) => toCommand(caller, j));
      await ctx.send(cmds);
      return reply.status(202).send({
        jobs: cmds.map((c) => ({
          jobId: (c.body.value as { jobId: string }).jobId,
          commandId: c.commandId,
          statusUrl: commandStatusUrl(c.commandId),
        })),
      });
    },
  );

  app.delete<{ Params: { jobId: string } }>('/v1/jobs/:jobId', async (req, reply) => {
    const caller = ctx.caller(req);
    await ctx.ownJob(caller, req.params.jobId, 'DELETE /v1/jobs/:jobId');
    const cmd = ctx.command(caller, {
      kind: 'CancelJob',
      value: { jobId: req.params.jobId, reason: null },
    });
    await ctx.send([cmd]);
    return reply.status(202).send({
      jobId: req.params.jobId,
      commandId: cmd.commandId,
      statusUrl: commandStatusUrl(cmd.commandId),
    });
  });

  app.post<{ Params: { jobId: string }; Body: { dueAt: string | number; expectedVersion?: number } }>(
    '/v1/jobs/:jobId/reschedule',
    {
      schema: {
        body: {
          type: 'object',
          required: ['dueAt'],
          properties: {
            dueAt: { type: ['string', 'integer'] },
            expectedVersion: { type: 'integer', minimum: 1 },
          },
        },
      },
    },
    async (req, reply) => {
      const caller = ctx.caller(req);
      const dueAtMs = parseInstant('dueAt', req.body.dueAt);
      const { state, version } = await ctx.ownJob(
        caller,
        req.params.jobId,
        'POST /v1/jobs/:jobId/reschedule',
      );
      const expected = req.body.expectedVersion;
      if (expected !== undefined && expected !== version)
        throw new ApiError(
          'SCHED_E_VERSION_CONFLICT',
          `job ${req.params.jobId} is at version ${version}, not ${expected}: nothing was sent`,
        );
      if (state === 'RUNNING')
        throw new ApiError(
          'SCHED_E_JOB_RUNNING',
          `job ${req.params.jobId} is running: a reschedule would not stop the run; cancel it, or reschedule once it has ended`,
        );
      const cmd = ctx.command(caller, {
        kind: 'RescheduleJob',
        value: {
          jobId: req.params.jobId,
          dueAtMs,
          expectedVersion: req.body.expectedVersion ?? null,
        },
      });
      await ctx.send([cmd]);
      return reply.status(202).send({
        jobId: req.params.jobId,
        commandId: cmd.commandId,
        statusUrl: commandStatusUrl(cmd.commandId),
      });
    },
  );

  /** The job as Postgres (the truth) has it, with its attempts. */
  app.get<{ Params: { jobId: string } }>('/v1/jobs/:jobId', async (req) => {
    const caller = ctx.caller(req);
    const { rows } = await ctx.pool.query(
      `SELECT job_id AS "jobId", tenant_id AS "tenantId", queue, state, version, attempt, due_at AS "dueAt",
              priority, business_key AS "businessKey", schedule_id AS "scheduleId", dispatched_at AS "dispatchedAt",
              finished_at AS "finishedAt", created_at AS "createdAt"
       FROM job WHERE job_id = $1 AND tenant_id = $2`,
      [req.params.jobId, caller.tenantId],
    );
    if (rows.length === 0) throw new ApiError('SCHED_E_NOT_FOUND', `no job ${req.params.jobId}`);
    const attempts = await ctx.pool.query(
      `SELECT attempt_id AS "attemptId", attempt, worker_id AS "workerId", started_at AS "startedAt", ended_at AS "endedAt",
              outcome, failure_class AS "failureClass", error FROM attempt_history WHERE job_id = $1 ORDER BY started_at`,
      [req.params.jobId],
    );
    return { ...rows[0], attempts: attempts.rows };
  });
}
