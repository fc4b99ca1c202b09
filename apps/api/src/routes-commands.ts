import type { FastifyInstance } from 'fastify';
import { commandStatus, type CommandStatus } from '@sched/store';
import type { ApiContext } from './app.js';
import { ApiError } from './errors.js';

/** Longest `wait` a status request may hold: 30 s. */
const MAX_WAIT_MS = 30_000;
const POLL_MS = 100;

/** `5s`, `500ms` or integer ms. */
export function parseWait(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 0;
  const m = /^(\d+)(ms|s)?$/.exec(raw);
  const ms = m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : NaN;
  if (!Number.isSafeInteger(ms) || ms > MAX_WAIT_MS)
    throw new ApiError(
      'SCHED_E_VALIDATION',
      `wait must be a duration up to 30s (e.g. 5s, 500ms, or ms), got ${JSON.stringify(raw)}`,
    );
  return ms;
}

export const commandStatusUrl = (commandId: string): string =>
  `/v1/commands/${encodeURIComponent(commandId)}`;

export function registerCommandRoutes(app: FastifyInstance, ctx: ApiContext): void {
  /**
   * What became of a command: `pending` (sent, not decided on yet), `applied`, `no-op` (with why)
   * or `rejected` (with the reason). `?wait=5s` holds the answer until it is decided or the wait is
   * over. The caller's own tenant's commands only; a command unknown at the end of the wait (one
   * produced to the command topic directly and not decided on yet, pruned, or another tenant's)
   * is a 404.
   */
  app.get<{ Params: { commandId: string }; Querystring: { wait?: string } }>(
    '/v1/commands/:commandId',
    async (req) => {
      const caller = ctx.caller(req);
      const waitMs = parseWait(req.query.wait);
      const until = Date.now() + waitMs;
      let st: CommandStatus | undefined;
      for (;;) {
        st = await commandStatus(ctx.pool, caller.tenantId, req.params.commandId);
        // Unknown may be not decided on yet (a command produced to the topic directly): waited on too.
        if ((st !== undefined && st.status !== 'pending') || Date.now() + POLL_MS > until) break;
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      if (!st) throw new ApiError('SCHED_E_NOT_FOUND', `no command ${req.params.commandId} in this tenant`);
      return st;
    },
  );
}
