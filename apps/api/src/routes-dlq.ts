import type { FastifyInstance } from 'fastify';
import { deadLetterGet, replayDeadLetters } from '@sched/dead-letters';
import type { ApiContext } from './app.js';
import { ApiError } from './errors.js';

export function registerDlqRoutes(app: FastifyInstance, ctx: ApiContext): void {
  /** Oldest dead letters first (the backlog somebody should be working). */
  app.get<{ Querystring: { queue?: string; limit?: number } }>('/v1/dlq', async (req) => {
    const caller = ctx.caller(req);
    const { rows } = await ctx.pool.query(
      `SELECT job_id AS "jobId", queue, dead_at AS "deadAt", failure_class AS "failureClass", last_error AS "lastError",
              attempts, replay_count AS "replayCount", quarantined
       FROM dead_letter WHERE tenant_id = $1 AND replayed_at IS NULL AND ($2::text IS NULL OR queue = $2)
       ORDER BY dead_at LIMIT $3`,
      [caller.tenantId, req.query.queue ?? null, Math.min(Number(req.query.limit ?? 100), 1000)],
    );
    return { deadLetters: rows };
  });

  app.get<{ Params: { jobId: string } }>('/v1/dlq/:jobId', async (req) => {
    const caller = ctx.caller(req);
    const dl = await deadLetterGet(ctx.pool, req.params.jobId, caller.tenantId);
    if (!dl) throw new ApiError('SCHED_E_NOT_FOUND', `${req.params.jobId} is not dead-lettered`);
    return dl;
  });

  /** Governed replay: permission, reason, rate, schema check, audit (see @sched/dead-letters). */
  app.post<{
    Body: {
      jobIds: string[];
      reason: string;
      ratePerSec?: number;
      attempts?: number;
      includeQuarantined?: boolean;
    };
  }>(
    '/v1/dlq/replay',
    {
      schema: {
        body: {
          type: 'object',
          required: ['jobIds', 'reason'],
          properties: { jobIds: { type: 'array', items: { type: 'string' } }, reason: { type: 'string' } },
        },
      },
    },
    async (req) => {
      const caller = ctx.caller(req);
      return replayDeadLetters(ctx.pool, ctx.payloadValidator, {
        caller,
        jobIds: req.body.jobIds,
        reason: req.body.reason,
        ratePerSec: req.body.ratePerSec ?? 100,
        attempts: req.body.attempts,
        includeQuarantined: req.body.includeQuarantined,
      });
    },
  );
}
