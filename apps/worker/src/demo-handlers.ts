import type { HandlerModule } from './main.js';

/** The demo's handlers: log each job of the `default` queue and succeed. */
export const register: HandlerModule['register'] = (worker, { log }) => {
  worker.handle('default', async (job, ctx) => {
    log.info(
      { jobId: job.jobId, attempt: job.attempt, lateMs: Date.now() - job.dueAtMs, key: ctx.idempotencyKey },
      'demo job ran',
    );
  });
};
