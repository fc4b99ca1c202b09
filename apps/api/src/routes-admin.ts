import type { FastifyInstance } from 'fastify';
import { queueList, queuePut, tenantGet, tenantList, tenantPendingCounts, tenantPut } from '@sched/store';
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

  /** A queue's configuration: its dispatch rate (queues are the platform's, shared by tenants). */
  app.get<{ Params: { queue: string } }>('/v1/queues/:queue', async (req) => {
    ctx.caller(req);
    const q = (await queueList(ctx.pool)).find((r) => r.queue === req.params.queue);
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
}
