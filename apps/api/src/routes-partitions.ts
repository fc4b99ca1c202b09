import type { FastifyInstance } from 'fastify';
import { homeRegion, partitionOwnerList, workerList } from '@sched/store';
import type { ApiContext } from './app.js';
import { ApiError } from './errors.js';

/** The permission to read partition ownership (operators: it spans every tenant). */
export const OPS_READ_PERMISSION = 'ops:read';

export function registerPartitionRoutes(app: FastifyInstance, ctx: ApiContext): void {
  /**
   * Who owns each command-topic partition right now, under which epoch and for how long, and the
   * home region (null: none set). The same rows the fence reads; for dashboards and incidents
   * (a partition whose owner keeps changing, one owned by a process that is gone).
   */
  app.get('/v1/partitions', async (req) => {
    const caller = ctx.caller(req);
    if (!caller.permissions.includes(OPS_READ_PERMISSION))
      throw new ApiError('SCHED_E_FORBIDDEN', `reading partition ownership needs ${OPS_READ_PERMISSION}`);
    const [home, owners] = await Promise.all([homeRegion(ctx.pool), partitionOwnerList(ctx.pool)]);
    const now = Date.now();
    return {
      homeRegion: home
        ? { region: home.region, term: home.epoch, since: new Date(home.sinceMs).toISOString() }
        : null,
      partitions: owners.map((o) => ({
        partition: o.partition,
        ownerId: o.ownerId,
        epoch: Number(o.epoch),
        since: new Date(o.sinceMs).toISOString(),
        ownedForMs: Math.max(0, Math.round(now - o.sinceMs)),
      })),
    };
  });

  /**
   * Every worker process's liveness row (migration 013), most recently beaten first: alive or gone,
   * since when its incarnation runs, and how many jobs it holds RUNNING. A gone worker with running
   * jobs is one the reaper is about to take back.
   */
  app.get('/v1/workers', async (req) => {
    const caller = ctx.caller(req);
    if (!caller.permissions.includes(OPS_READ_PERMISSION))
      throw new ApiError('SCHED_E_FORBIDDEN', `reading worker liveness needs ${OPS_READ_PERMISSION}`);
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      workers: (await workerList(ctx.pool)).map((w) => ({
        workerId: w.workerId,
        incarnation: w.incarnation,
        alive: w.alive,
        startedAt: iso(w.startedAtMs),
        lastBeatAt: iso(w.beatAtMs),
        aliveUntil: iso(w.aliveUntilMs),
        running: w.running,
      })),
    };
  });
}
