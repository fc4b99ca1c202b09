import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { CommandInput, Contracts } from '@sched/contracts';
import type { MessageProducer } from '@sched/kafka';
import type { Logger } from '@sched/logging';
import type { PayloadValidator } from '@sched/dead-letters';
import type { Registry } from '@sched/metrics';
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
  /** API key → caller. Empty: every request is the anonymous caller of tenant `default`, without permissions. */
  callers: Map<string, ApiCaller>;
  payloadValidator: PayloadValidator;
  metrics?: Registry;
  log?: Logger;
  /** Clock for due-time parsing checks (tests). */
  now?: () => number;
}

export interface ApiContext extends ApiDeps {
  caller(req: FastifyRequest): ApiCaller;
  /** Encodes and produces commands keyed by entity id; resolves once Kafka acknowledged them (acks=all). */
  send(commands: CommandInput[]): Promise<void>;
  command(tenantId: string, body: CommandInput['body']): CommandInput;
  now(): number;
}

/** Builds the HTTP API without listening (tests use `app.inject`). */
export function buildApp(deps: ApiDeps): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
  const anonymous: ApiCaller = { id: 'anonymous', tenantId: 'default', permissions: [] };
  const ctx: ApiContext = {
    ...deps,
    now: deps.now ?? Date.now,
    caller(req) {
      const key = req.headers['x-api-key'];
      if (deps.callers.size === 0) return anonymous;
      const c = typeof key === 'string' ? deps.callers.get(key) : undefined;
      if (!c) throw new ApiError('SCHED_E_UNAUTHENTICATED', 'missing or unknown x-api-key');
      return c;
    },
    command(tenantId, body) {
      return { commandId: randomUUID(), tenantId, issuedAtMs: Date.now(), body };
    },
    async send(commands) {
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
