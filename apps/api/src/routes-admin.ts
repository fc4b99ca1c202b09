import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import {
  apiKeyInsert,
  apiKeyList,
  apiKeyRevoke,
  queueGet,
  queuePut,
  queueSetPaused,
  tenantGet,
  tenantList,
  tenantPendingCounts,
  tenantPut,
  tenantSetDisabled,
} from '@sched/store';
import { keyDigest } from './api-keys.js';
import type { ApiCaller, ApiContext } from './app.js';
import { ApiError } from './errors.js';

/** The permission that administers tenants, their quotas, and queues. */
export const ADMIN_PERMISSION = 'admin';

const TENANT_ID = '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$';
const QUEUE = '^[a-z0-9][a-z0-9_-]{0,63}$';
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

const tenantBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    maxPendingJobs: nullable({ type: 'integer', minimum: 0, maximum: 2_000_000_000 }),
    commandsPerSecond: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 }),
    commandBurst: nullable({ type: 'integer', minimum: 1, maximum: 10_000_000 }),
  },
} as const;

const queueBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    maxDispatchPerSecond: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 10_000_000 }),
  },
} as const;

function requireAdmin(caller: ApiCaller): void {
  if (!caller.permissions.includes(ADMIN_PERMISSION))
    throw new ApiError('SCHED_E_FORBIDDEN', `this needs the ${ADMIN_PERMISSION} permission`);
}

/**
 * Tenants and queues, administered: created and given quotas through the API (`admin` permission)
 * instead of rows inserted by hand. A caller may read its own tenant and its quotas.
 */
export function registerAdminRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/v1/tenants', async (req) => {
    requireAdmin(ctx.caller(req));
    return { tenants: await tenantList(ctx.pool) };
  });

  /** The tenant, its quotas and its pending jobs now (the caller's own, or any for an admin). */
  app.get<{ Params: { tenantId: string } }>('/v1/tenants/:tenantId', async (req) => {
    const caller = ctx.caller(req);
    const { tenantId } = req.params;
    if (tenantId !== caller.tenantId) requireAdmin(caller);
    const tenant = await tenantGet(ctx.pool, tenantId);
    if (!tenant) throw new ApiError('SCHED_E_NOT_FOUND', `no tenant ${tenantId}`);
    const pendingJobs = (await tenantPendingCounts(ctx.pool, [tenantId])).get(tenantId) ?? 0;
    return { ...tenant, pendingJobs };
  });

  /**
   * Creates the tenant (201) or sets its quotas (200). Every quota field absent or null is no
   * limit. The scheduler and every API instance see a change within a few seconds.
   */
  app.put<{
    Params: { tenantId: string };
    Body: { maxPendingJobs?: number | null; commandsPerSecond?: number | null; commandBurst?: number | null };
  }>(
    '/v1/tenants/:tenantId',
    {
      schema: {
        params: { type: 'object', properties: { tenantId: { type: 'string', pattern: TENANT_ID } } },
        body: tenantBody,
      },
    },
    async (req, reply) => {
      requireAdmin(ctx.caller(req));
      const b = req.body ?? {};
      if (b.commandBurst != null && b.commandsPerSecond == null)
        throw new ApiError('SCHED_E_VALIDATION', 'commandBurst needs commandsPerSecond');
      const { tenant, created } = await tenantPut(ctx.pool, req.params.tenantId, {
        maxPendingJobs: b.maxPendingJobs ?? null,
        commandsPerSecond: b.commandsPerSecond ?? null,
        commandBurst: b.commandBurst ?? null,
      });
      return reply.status(created ? 201 : 200).send(tenant);
    },
  );

  /**
   * Pauses a queue (the schedulers dispatch none of its jobs within a second or so; due jobs wait
   * SCHEDULED as due backlog, commands are still applied) or resumes it (the backlog drains).
   */
  for (const verb of ['pause', 'resume'] as const)
    app.post<{ Params: { queue: string } }>(`/v1/queues/:queue/${verb}`, async (req) => {
      requireAdmin(ctx.caller(req));
      const q = await queueSetPaused(ctx.pool, req.params.queue, verb === 'pause');
      if (!q) throw new ApiError('SCHED_E_NOT_FOUND', `no queue ${req.params.queue}`);
      return q;
    });

  /** A queue's configuration: its dispatch rate (queues are the platform's, shared by tenants). */
  app.get<{ Params: { queue: string } }>('/v1/queues/:queue', async (req) => {
    ctx.caller(req);
    const q = await queueGet(ctx.pool, req.params.queue);
    if (!q) throw new ApiError('SCHED_E_NOT_FOUND', `no queue ${req.params.queue}`);
    return q;
  });

  /**
   * Creates the queue (201) or sets its fleet-wide dispatch rate (200; absent or null: none). Due
   * jobs beyond the rate wait as due backlog and are dispatched as the rate allows.
   */
  app.put<{ Params: { queue: string }; Body: { maxDispatchPerSecond?: number | null } }>(
    '/v1/queues/:queue',
    {
      schema: {
        params: { type: 'object', properties: { queue: { type: 'string', pattern: QUEUE } } },
        body: queueBody,
      },
    },
    async (req, reply) => {
      requireAdmin(ctx.caller(req));
      const { queue, created } = await queuePut(
        ctx.pool,
        req.params.queue,
        req.body?.maxDispatchPerSecond ?? null,
      );
      return reply.status(created ? 201 : 200).send(queue);
    },
  );

  const known = async (tenantId: string) => {
    if (!(await tenantGet(ctx.pool, tenantId)))
      throw new ApiError('SCHED_E_NOT_FOUND', `no tenant ${tenantId}`);
  };

  /**
   * Issues an API key for a caller of the tenant (201). The key is in this answer only: the API
   * keeps its SHA-256 digest. `permissions` among the platform's (`dlq:replay`, `ops:read`, `admin`…).
   */
  app.post<{ Params: { tenantId: string }; Body: { callerId: string; permissions?: string[] } }>(
    '/v1/tenants/:tenantId/keys',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['callerId'],
          properties: {
            callerId: { type: 'string', minLength: 1, maxLength: 200 },
            permissions: {
              type: 'array',
              maxItems: 32,
              items: { type: 'string', pattern: '^[a-z][a-z0-9:-]{0,63}$' },
            },
          },
        },
      },
    },
    async (req, reply) => {
      requireAdmin(ctx.caller(req));
      await known(req.params.tenantId);
      const key = `sk_${randomBytes(32).toString('base64url')}`;
      const row = await apiKeyInsert(ctx.pool, {
        keyId: `key_${randomBytes(8).toString('hex')}`,
        digest: keyDigest(key),
        callerId: req.body.callerId,
        tenantId: req.params.tenantId,
        permissions: [...new Set(req.body.permissions ?? [])],
      });
      return reply.status(201).send({ ...row, key });
    },
  );

  /** The tenant's keys, without the keys themselves (revoked ones with their revocation time). */
  app.get<{ Params: { tenantId: string } }>('/v1/tenants/:tenantId/keys', async (req) => {
    requireAdmin(ctx.caller(req));
    await known(req.params.tenantId);
    return { keys: await apiKeyList(ctx.pool, req.params.tenantId) };
  });

  /** Revokes a key: refused by every API instance within a few seconds. */
  app.delete<{ Params: { tenantId: string; keyId: string } }>(
    '/v1/tenants/:tenantId/keys/:keyId',
    async (req) => {
      requireAdmin(ctx.caller(req));
      const row = await apiKeyRevoke(ctx.pool, req.params.tenantId, req.params.keyId);
      if (!row)
        throw new ApiError(
          'SCHED_E_NOT_FOUND',
          `no key ${req.params.keyId} in tenant ${req.params.tenantId}`,
        );
      return row;
    },
  );

  /**
   * Disables a tenant (its callers are refused with 403, its commands rejected UNKNOWN_TENANT by
   * the scheduler; its jobs stay as they are) or enables it again.
   */
  for (const verb of ['disable', 'enable'] as const)
    app.post<{ Params: { tenantId: string } }>(`/v1/tenants/:tenantId/${verb}`, async (req) => {
      const caller = ctx.caller(req);
      requireAdmin(caller);
      if (verb === 'disable' && req.params.tenantId === caller.tenantId)
        throw new ApiError(
          'SCHED_E_VALIDATION',
          'an admin cannot disable its own tenant (its key would stop working)',
        );
      if (!(await tenantSetDisabled(ctx.pool, req.params.tenantId, verb === 'disable')))
        throw new ApiError('SCHED_E_NOT_FOUND', `no tenant ${req.params.tenantId}`);
      return (await tenantGet(ctx.pool, req.params.tenantId))!;
    });
}
