import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { CommandInput, Contracts } from '@sched/contracts';
import type { MessageProducer } from '@sched/kafka';
import { LogThrottle, type Logger } from '@sched/logging';
import type { PayloadValidator } from '@sched/dead-letters';
import { counter, type Registry } from '@sched/metrics';
import {
  apiKeyByDigest,
  bucketSize,
  commandIssue,
  tenantCommandTake,
  tenantGet,
  tenantPendingCounts,
  type TenantRow,
} from '@sched/store';
import { digestOf, keyDigest } from './api-keys.js';
import { ApiError, toHttp } from './errors.js';
import { registerJobRoutes } from './routes-jobs.js';
import { registerScheduleRoutes } from './routes-schedules.js';
import { registerDlqRoutes } from './routes-dlq.js';
import { registerPartitionRoutes } from './routes-partitions.js';
import { registerQueueRoutes } from './routes-queues.js';
import { registerAdminRoutes } from './routes-admin.js';
import { registerCommandRoutes } from './routes-commands.js';
import { registerSearchRoutes } from './routes-search.js';
import { registerOpenApi } from './openapi.js';

const TENANT_CACHE_MS = 1_000;
/** How long an issued key's lookup is remembered (a revocation takes effect within it). */
const KEY_CACHE_MS = 5_000;
const KEY_CACHE_MAX = 10_000;
const PENDING_CACHE_MS = 1_000;
/** A pending cap frees up as jobs finish: no time can be computed, a few seconds are suggested. */
const PENDING_RETRY_AFTER_MS = 5_000;

export interface ApiCaller {
  id: string;
  tenantId: string;
  permissions: readonly string[];
}

export interface ApiDeps {
  /**
   * Validate every JSON response against its route's documented schema (tests): a mismatch is a
   * 500 SCHED_E_RESPONSE_SCHEMA instead of a document that drifted from the API.
   */
  checkResponses?: boolean;
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
  const app = Fastify({
    logger: false,
    bodyLimit: 16 * 1024 * 1024,
    // An instant is a string or an integer (`type: ['string', 'integer']`): allowed, not warned about.
    ajv: { customOptions: { allowUnionTypes: true } },
  });
  const anonymous: ApiCaller = { id: 'anonymous', tenantId: 'default', permissions: [] };
  const auth = deps.auth ?? 'keys';
  // Held by digest: a key given in the clear is hashed here.
  const callers = new Map([...deps.callers].map(([k, c]) => [digestOf(k), c]));
  const refusals = deps.metrics
    ? counter(
        deps.metrics,
        'sched_api_refusals_total',
        'requests refused: unauthenticated (no or unknown key), tenant_disabled, other_tenant (a job or schedule of another tenant, answered 404 as an unknown id), forbidden (a permission missing), quota_pending and rate_limited (429)',
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
  // Tenants (and their quotas) for a second: a tenant created or given quotas by an admin is seen
  // by every API instance within that.
  const tenantsSeen = new Map<string, { at: number; row: TenantRow | undefined }>();
  const tenantOf = async (tenantId: string): Promise<TenantRow | undefined> => {
    const seen = tenantsSeen.get(tenantId);
    if (seen !== undefined && Date.now() - seen.at < TENANT_CACHE_MS) return seen.row;
    const row = await tenantGet(deps.pool, tenantId);
    // Only a tenant found is remembered: one created a moment ago is seen at once.
    if (row) tenantsSeen.set(tenantId, { at: Date.now(), row });
    return row;
  };
  // A capped tenant's pending count, for a second (the scheduler's count is the authority).
  const pendingSeen = new Map<string, { at: number; n: number }>();
  const pendingOf = async (tenantId: string): Promise<number> => {
    const seen = pendingSeen.get(tenantId);
    if (seen !== undefined && Date.now() - seen.at < PENDING_CACHE_MS) return seen.n;
    const n = (await tenantPendingCounts(deps.pool, [tenantId])).get(tenantId) ?? 0;
    pendingSeen.set(tenantId, { at: Date.now(), n });
    return n;
  };
  /** Refused at the door, nothing sent: an unknown tenant, a pending cap reached, the command rate. */
  const admit = async (caller: string, tenantId: string, commands: CommandInput[]): Promise<void> => {
    const tenant = await tenantOf(tenantId);
    if (!tenant)
      throw new ApiError(
        'SCHED_E_UNKNOWN_TENANT',
        `tenant ${tenantId} is not known to the platform (create it with PUT /v1/tenants/${tenantId}): nothing was sent`,
      );
    if (tenant.disabledAt)
      throw new ApiError('SCHED_E_TENANT_DISABLED', `tenant ${tenantId} is disabled: nothing was sent`);
    const creates = commands.filter((c) => c.body.kind === 'CreateJob').length;
    if (tenant.maxPendingJobs !== null && creates > 0) {
      const pending = await pendingOf(tenantId);
      if (pending + creates > tenant.maxPendingJobs) {
        refuse('quota_pending', { caller, tenant: tenantId, pending, creates }, 'pending-jobs quota reached');
        throw new ApiError(
          'SCHED_E_QUOTA_EXCEEDED',
          `tenant ${tenantId} has ${pending} pending jobs of its quota of ${tenant.maxPendingJobs}; ` +
            `${creates} more would exceed it: nothing was sent`,
          true,
          PENDING_RETRY_AFTER_MS,
        );
      }
    }
    if (tenant.commandsPerSecond !== null) {
      const burst = bucketSize(tenant.commandsPerSecond, tenant.commandBurst);
      if (commands.length > burst)
        throw new ApiError(
          'SCHED_E_VALIDATION',
          `a request of ${commands.length} commands is larger than tenant ${tenantId}'s command burst of ${burst}: split it`,
        );
      const took = await tenantCommandTake(
        deps.pool,
        tenantId,
        commands.length,
        tenant.commandsPerSecond,
        burst,
      );
      if (!took.ok) {
        refuse(
          'rate_limited',
          { caller, tenant: tenantId, commands: commands.length },
          'command rate quota reached',
        );
        throw new ApiError(
          'SCHED_E_RATE_LIMITED',
          `tenant ${tenantId} is over its command rate of ${tenant.commandsPerSecond}/s: nothing was sent`,
          true,
          took.retryAfterMs,
        );
      }
    }
  };
  // Keys: the bootstrap ones (SCHED_API_KEYS) by digest, then those the API issued (api_key), by
  // digest too, remembered for a few seconds (a revoked key or a disabled tenant is refused within
  // that), misses as well, in a bounded map (random keys cannot grow it).
  const issued = new Map<string, { at: number; caller: ApiCaller | 'disabled' | undefined }>();
  const issuedCaller = async (digest: string): Promise<ApiCaller | 'disabled' | undefined> => {
    const seen = issued.get(digest);
    if (seen !== undefined && Date.now() - seen.at < KEY_CACHE_MS) return seen.caller;
    const row = await apiKeyByDigest(deps.pool, digest);
    const caller: ApiCaller | 'disabled' | undefined = !row
      ? undefined
      : row.tenantDisabled
        ? 'disabled'
        : { id: row.callerId, tenantId: row.tenantId, permissions: row.permissions };
    if (issued.size >= KEY_CACHE_MAX) issued.clear();
    issued.set(digest, { at: Date.now(), caller });
    return caller;
  };
  const resolved = new WeakMap<FastifyRequest, ApiCaller | 'disabled'>();
  if (auth !== 'off')
    app.addHook('onRequest', async (req) => {
      const key = req.headers['x-api-key'];
      if (typeof key !== 'string' || key.length === 0 || key.length > 512) return;
      const digest = keyDigest(key);
      const caller = callers.get(digest) ?? (await issuedCaller(digest));
      if (!caller) return;
      if (caller !== 'disabled' && (await tenantOf(caller.tenantId))?.disabledAt)
        resolved.set(req, 'disabled');
      else resolved.set(req, caller);
    });
  const ctx: ApiContext = {
    ...deps,
    now: deps.now ?? Date.now,
    caller(req) {
      if (auth === 'off') return anonymous;
      const c = resolved.get(req);
      if (c === 'disabled') {
        refuse('tenant_disabled', { route: req.routeOptions.url }, 'a key of a disabled tenant');
        throw new ApiError('SCHED_E_TENANT_DISABLED', 'this key belongs to a disabled tenant');
      }
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
      for (const t of new Set(commands.map((c) => c.tenantId)))
        await admit(
          commands.find((c) => c.tenantId === t)?.callerId ?? 'unknown',
          t,
          commands.filter((c) => c.tenantId === t),
        );
      const entity = (c: CommandInput) => {
        const v = c.body.value as { jobId?: string; scheduleId?: string };
        return v.jobId ?? v.scheduleId ?? null;
      };
      await deps.producer.send(
        deps.commandsTopic,
        commands.map((c) => ({ key: entity(c), value: deps.contracts.encodeCommand(c) })),
      );
      // After Kafka's ack (a command that failed to send is never `pending`); the scheduler may
      // decide on it first, which GET /v1/commands/:id answers from its own row either way.
      await commandIssue(
        deps.pool,
        commands.map((c) => ({
          commandId: c.commandId,
          tenantId: c.tenantId,
          kind: c.body.kind,
          entityId: entity(c),
          callerId: c.callerId ?? null,
        })),
      ).catch((err: unknown) =>
        deps.log?.warn(
          { err },
          'commands sent but not recorded as issued: their status is unknown until decided',
        ),
      );
    },
  };

  app.setErrorHandler((err, _req, reply) => {
    const { status, body } = toHttp(err);
    if (err instanceof ApiError && err.retryAfterMs !== undefined)
      void reply.header('retry-after', String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))));
    if (status >= 500) deps.log?.error({ err }, 'request failed');
    void reply.status(status).send(body);
  });

  registerOpenApi(app, { checkResponses: deps.checkResponses });
  // The routes load after the OpenAPI plugin, so that every one of them is in the document.
  void app.register(async (api) => {
    api.get('/healthz', { schema: { security: [] } }, async () => ({ ok: true }));
    api.get('/metrics', { schema: { security: [] } }, async (_req, reply) => {
      if (!deps.metrics) throw new ApiError('SCHED_E_NOT_FOUND', 'metrics are not enabled');
      return reply.header('content-type', deps.metrics.contentType).send(await deps.metrics.metrics());
    });
    registerJobRoutes(api, ctx);
    registerScheduleRoutes(api, ctx);
    registerDlqRoutes(api, ctx);
    registerQueueRoutes(api, ctx);
    registerPartitionRoutes(api, ctx);
    registerAdminRoutes(api, ctx);
    registerCommandRoutes(api, ctx);
    registerSearchRoutes(api, ctx);
  });
  return app;
}

/** An instant from a query string, where every value is text: ISO-8601 with an offset, or digits (ms since the epoch). */
export function parseQueryInstant(field: string, raw: string): number {
  return parseInstant(field, /^\d+$/.test(raw) ? Number(raw) : raw);
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
