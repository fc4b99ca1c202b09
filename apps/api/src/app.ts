import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { CommandInput, Contracts } from '@sched/contracts';
import type { MessageProducer } from '@sched/kafka';
import { LogThrottle, type Logger } from '@sched/logging';
import type { PayloadValidator } from '@sched/dead-letters';
import { counter, type Registry } from '@sched/metrics';
import { callerOfKey, digestOf } from './api-keys.js';
import { ApiError, toHttp } from './errors.js';
import { registerJobRoutes } from './routes-jobs.js';
import { registerScheduleRoutes } from './routes-schedules.js';
import { registerDlqRoutes } from './routes-dlq.js';
import { registerPartitionRoutes } from './routes-partitions.js';
import { registerQueueRoutes } from './routes-queues.js';

export interface ApiCaller {
  id: string;
  tenantId: string;
  permissions: readonly string[];
}

export interface ApiDeps {
  producer: MessageProducer;
  contracts: Contracts;
  pool: pg.Pool;
  commandsTopic: string;
  /**
   * API key (or its `sha256:` digest, as `parseApiKeys` returns them) → caller. Held by digest only.
   */
  callers: Map<string, ApiCaller>;
  /**
   * `keys` (default): every request needs an `x-api-key` among `callers` (none: every request is
   * 401). `off`: development mode, every request is the anonymous caller of tenant `default`
   * without permissions, whatever key it sends.
   */
  auth?: 'keys' | 'off';
  payloadValidator: PayloadValidator;
  metrics?: Registry;
  log?: Logger;
  /** Clock for due-time parsing checks (tests). */
  now?: () => number;
}

export interface ApiContext extends ApiDeps {
  caller(req: FastifyRequest): ApiCaller;
  /**
   * Throws the same 404 as for an id that does not exist unless the job (or schedule) is the
   * caller's: another tenant's is never acted on, and its existence does not leak. Each such
   * refusal is counted (`sched_api_refusals_total{reason="other_tenant"}`) and logged.
   */
  ownJob(caller: ApiCaller, jobId: string, route: string): Promise<{ state: string; version: number }>;
  ownSchedule(caller: ApiCaller, scheduleId: string, route: string, mayBeNew?: boolean): Promise<void>;
  /** Encodes and produces commands keyed by entity id; resolves once Kafka acknowledged them (acks=all). */
  send(commands: CommandInput[]): Promise<void>;
  /** A command of the caller's tenant, naming the caller (`callerId`). */
  command(caller: ApiCaller, body: CommandInput['body']): CommandInput;
  now(): number;
}

/** Builds the HTTP API without listening (tests use `app.inject`). */
export function buildApp(deps: ApiDeps): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
  const anonymous: ApiCaller = { id: 'anonymous', tenantId: 'default', permissions: [] };
  const auth = deps.auth ?? 'keys';
  // Held by digest: a key given in the clear is hashed here.
  const callers = new Map([...deps.callers].map(([k, c]) => [digestOf(k), c]));
  const refusals = deps.metrics
    ? counter(
        deps.metrics,
        'sched_api_refusals_total',
        'requests refused: unauthenticated (no or unknown key), other_tenant (a job or schedule of another tenant, answered 404 as an unknown id)',
        ['reason'],
      )
    : undefined;
  const refusalLog = new LogThrottle(1_000);
  const refuse = (reason: string, fields: Record<string, unknown>, message: string) => {
    refusals?.inc({ reason });
    const pass = refusalLog.take(reason);
    if (pass) deps.log?.warn({ reason, ...fields, sameReasonNotLogged: pass.dropped }, message);
  };
  const notFound = (what: string, id: string) =>
    new ApiError('SCHED_E_NOT_FOUND', `no ${what} ${id} in this tenant`);
  const rowOf = async (table: 'job' | 'schedule', id: string) => {
    const { rows } = await deps.pool.query<{ tenant_id: string; state: string; version: number }>(
      `SELECT tenant_id, state, version FROM ${table} WHERE ${table}_id = $1`,
      [id],
    );
    return rows[0];
  };
  // Tenants known to exist, for a few seconds (a tenant is added, not removed, under a running API).
  const tenantsSeen = new Map<string, number>();
  const knownTenant = async (tenantId: string): Promise<boolean> => {
    const at = tenantsSeen.get(tenantId);
    if (at !== undefined && Date.now() - at < 5_000) return true;
    const { rowCount } = await deps.pool.query('SELECT 1 FROM tenant WHERE tenant_id = $1', [tenantId]);
    if (rowCount === 0) return false;
    tenantsSeen.set(tenantId, Date.now());
    return true;
  };
  const ctx: ApiContext = {
    ...deps,
    now: deps.now ?? Date.now,
    caller(req) {
      if (auth === 'off') return anonymous;
      const key = req.headers['x-api-key'];
      const c = typeof key === 'string' ? callerOfKey(callers, key) : undefined;
      if (!c) {
        refuse('unauthenticated', { route: req.routeOptions.url }, 'request without a known x-api-key');
        throw new ApiError('SCHED_E_UNAUTHENTICATED', 'missing or unknown x-api-key');
      }
      return c;
    },
    async ownJob(caller, jobId, route) {
      const row = await rowOf('job', jobId);
      const owner = row?.tenant_id;
      if (row && owner === caller.tenantId) return { state: row.state, version: row.version };
      if (owner !== undefined)
        refuse(
          'other_tenant',
          { route, caller: caller.id, tenant: caller.tenantId, jobId },
          "another tenant's job: answered as unknown",
        );
      throw notFound('job', jobId);
    },
    async ownSchedule(caller, scheduleId, route, mayBeNew = false) {
      const owner = (await rowOf('schedule', scheduleId))?.tenant_id;
      if (owner === caller.tenantId || (owner === undefined && mayBeNew)) return;
      if (owner !== undefined)
        refuse(
          'other_tenant',
          { route, caller: caller.id, tenant: caller.tenantId, scheduleId },
          "another tenant's schedule: answered as unknown",
        );
      throw notFound('schedule', scheduleId);
    },
    command(caller, body) {
      return {
        commandId: randomUUID(),
        tenantId: caller.tenantId,
        issuedAtMs: Date.now(),
        body,
        callerId: caller.id,
      };
    },
    async send(commands) {
      // Refused at the door, nothing sent: a tenant the scheduler would reject as UNKNOWN_TENANT.
      for (const t of new Set(commands.map((c) => c.tenantId)))
        if (!(await knownTenant(t)))
          throw new ApiError(
            'SCHED_E_UNKNOWN_TENANT',
            `tenant ${t} is not known to the platform (no row in its tenant table): nothing was sent`,
          );
      await deps.producer.send(
        deps.commandsTopic,
        commands.map((c) => {
          const v = c.body.value as { jobId?: string; scheduleId?: string };
          return { key: v.jobId ?? v.scheduleId ?? null, value: deps.contracts.encodeCommand(c) };
        }),
      );
    },
  };

  app.setErrorHandler((err, _req, reply) => {
    const { status, body } = toHttp(err);
    if (status >= 500) deps.log?.error({ err }, 'request failed');
    void reply.status(status).send(body);
  });

  app.get('/healthz', async () => ({ ok: true }));
  app.get('/metrics', async (_req, reply) => {
    if (!deps.metrics) throw new ApiError('SCHED_E_NOT_FOUND', 'metrics are not enabled');
    return reply.header('content-type', deps.metrics.contentType).send(await deps.metrics.metrics());
  });
  registerJobRoutes(app, ctx);
  registerScheduleRoutes(app, ctx);
  registerDlqRoutes(app, ctx);
  registerQueueRoutes(app, ctx);
  registerPartitionRoutes(app, ctx);
  return app;
}

/** Accepts an ISO-8601 instant with offset, or integer ms since the epoch. */
export function parseInstant(field: string, v: unknown): number {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:?\d{2})$/.test(v)) {
    const ms = Date.parse(v);
    if (Number.isFinite(ms)) return ms;
  }
  throw new ApiError(
    'SCHED_E_VALIDATION',
    `${field} must be an ISO-8601 instant with a zone offset (e.g. 2026-12-01T09:00:00Z) or integer ms since the epoch`,
  );
}
