import type { FastifyInstance } from 'fastify';
import { queueDepth, queueList } from '@sched/store';
import type { ApiContext } from './app.js';
import { ApiError } from './errors.js';

/** Longest `overdueAfterMs` accepted: a day. */
const MAX_OVERDUE_AFTER_MS = 24 * 3600_000;

export function registerQueueRoutes(app: FastifyInstance, ctx: ApiContext): void {
  /**
   * The caller's queues at both ends of the dispatch, over every partition: due and not claimed
   * (`overdue`, due more than `overdueAfterMs` ago, default 2 s), claimed and not started
   * (`dispatched`), `running`, and the oldest overdue and dispatched job's age in seconds. Queues
   * with nothing overdue or in flight are left out. It reads a row per overdue or in-flight job:
   * for dashboards and incidents, not a hot loop (the scheduler exports the same per queue as
   * `sched_queue_*` gauges). `known` lists every queue of the platform with its configuration
   * (dispatch rate, paused).
   */
  app.get<{ Querystring: { overdueAfterMs?: string } }>('/v1/queues', async (req) => {
    const caller = ctx.caller(req);
    const raw = req.query.overdueAfterMs;
    const graceMs = raw === undefined ? 2_000 : Number(raw);
    if (!Number.isSafeInteger(graceMs) || graceMs < 0 || graceMs > MAX_OVERDUE_AFTER_MS)
      throw new ApiError(
        'SCHED_E_VALIDATION',
        `overdueAfterMs must be an integer from 0 to ${MAX_OVERDUE_AFTER_MS} (got ${JSON.stringify(raw)})`,
      );
    const queues = await queueDepth(ctx.pool, { partitions: null, graceMs, tenantId: caller.tenantId });
    return { tenantId: caller.tenantId, overdueAfterMs: graceMs, queues, known: await queueList(ctx.pool) };
  });
}
