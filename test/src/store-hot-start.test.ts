import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  LEASE_FIRST_CHECK_MS,
  inTransaction,
  jobClaimDueAcross,
  jobCreateBatch,
  leaseAcquireMany,
  leaseReap,
  leaseRenew,
  partitionClaim,
} from '@sched/store';
import { schemaForSuite } from './support/isolation.js';
import { newJob } from './support/new-job.js';

/**
 * Updates (all, HOT) of `job` this backend has not yet reported to the statistics (Postgres 15 counts
 * the open transaction's and those of earlier ones not flushed yet): read before and after.
 */
const hotUpdates = async (c: pg.ClientBase) =>
  Number(
    (await c.query<{ n: string }>("SELECT pg_stat_get_xact_tuples_hot_updated('job'::regclass) AS n"))
      .rows[0]!.n,
  );
const updates = async (c: pg.ClientBase) =>
  Number(
    (await c.query<{ n: string }>("SELECT pg_stat_get_xact_tuples_updated('job'::regclass) AS n")).rows[0]!.n,
  );

describe('store: the start and heartbeats are HOT updates; the reaper finds leases by their check time (migration 016)', () => {
  const db = schemaForSuite('hotstart');

  async function claimed(partition: number, n: number, leaseMs: number) {
    const own = await partitionClaim(db().pool, partition, 'sched');
    const ids = Array.from({ length: n }, (_, i) => `hot-${partition}-${String(i).padStart(4, '0')}`);
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(
        c,
        partition,
        own.epoch,
        ids.map((id) => newJob(id, Date.now() - 5)),
      ),
    );
    const out = await inTransaction(db().pool, (c) =>
      jobClaimDueAcross(c, [{ partition, epoch: own.epoch }], ids, leaseMs),
    );
    expect(out.claimed).toHaveLength(n);
    return { own, claimed: out.claimed };
  }

  it('starting 400 claimed jobs writes many of them as HOT updates, and a heartbeat is HOT', async () => {
    const { claimed: jobs } = await claimed(0, 400, 60_000);
    const reqs = jobs.map((j) => ({
      jobId: j.jobId,
      version: j.version,
      attempt: j.attempt,
      attemptId: randomUUID(),
    }));
    const { started, hot, total } = await inTransaction(db().pool, async (c) => {
      const [hot0, total0] = [await hotUpdates(c), await updates(c)];
      const leases = await leaseAcquireMany(c, 'w1', 30_000, reqs);
      return { started: leases, hot: (await hotUpdates(c)) - hot0, total: (await updates(c)) - total0 };
    });
    expect(started.size).toBe(400);
    expect(total).toBe(400);
    // Measured: 52 % at fillfactor 75 (90 % at 50, 1 % at 100); any index keyed on or filtered by a
    // column the start changes (state, lease_until) makes it 0.
    console.log(`[hot-start] ${hot} of ${total} starts HOT`);
    expect(hot).toBeGreaterThan(total / 4);

    const lease = [...started.values()][0]!;
    const beat = await inTransaction(db().pool, async (c) => {
      // leaseRenew takes a pool; a client in a transaction answers the same query() call.
      const [hot0, total0] = [await hotUpdates(c), await updates(c)];
      const until = await leaseRenew(c as unknown as pg.Pool, lease, 30_000);
      return { until, hot: (await hotUpdates(c)) - hot0, total: (await updates(c)) - total0 };
    });
    expect(beat.until).not.toBeNull();
    expect(beat).toMatchObject({ hot: 1, total: 1 });
  });

  it('a claim sets the first check at the dispatch lease or 30 s, whichever is sooner', async () => {
    await claimed(1, 2, 5 * 60_000);
    await claimed(2, 2, 2_000);
    const { rows } = await db().pool.query<{ partition: number; check_ms: number; lease_ms: number }>(
      `SELECT partition, extract(epoch FROM lease_check_at - dispatched_at) * 1000 AS check_ms,
              extract(epoch FROM lease_until - dispatched_at) * 1000 AS lease_ms
       FROM job WHERE partition IN (1, 2) ORDER BY partition`,
    );
    expect(rows.map((r) => [r.partition, Math.round(r.check_ms), Math.round(r.lease_ms)])).toEqual([
      [1, LEASE_FIRST_CHECK_MS, 300_000],
      [1, LEASE_FIRST_CHECK_MS, 300_000],
      [2, 2_000, 2_000],
      [2, 2_000, 2_000],
    ]);
  });

  it('a lease renewed since its check is not reaped: the next check moves to its end, where a lapse is found', async () => {
    const { own, claimed: jobs } = await claimed(3, 1, 200);
    const j = jobs[0]!;
    // Started with a lease longer than the dispatch lease: the first check comes while it runs.
    const leases = await leaseAcquireMany(db().pool, 'w1', 1_500, [
      { jobId: j.jobId, version: j.version, attempt: j.attempt, attemptId: randomUUID() },
    ]);
    expect(leases.size).toBe(1);
    await new Promise((r) => setTimeout(r, 400));
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 3, own.epoch, 10, 0))).toEqual([]);
    const row = async () =>
      (
        await db().pool.query<{ state: string; at_end: boolean; xmin: string }>(
          'SELECT state, lease_check_at = lease_until AS at_end, xmin::text FROM job WHERE job_id = $1',
          [j.jobId],
        )
      ).rows[0]!;
    const moved = await row();
    expect(moved).toMatchObject({ state: 'RUNNING', at_end: true });
    // Looked at again before the lease ends: not selected, not written.
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 3, own.epoch, 10, 0))).toEqual([]);
    expect((await row()).xmin).toBe(moved.xmin);
    // A stale owner moves nothing either (the fence).
    await new Promise((r) => setTimeout(r, 1_400));
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 3, own.epoch - 1, 10, 0))).toEqual([]);
    const reaped = await inTransaction(db().pool, (c) => leaseReap(c, 3, own.epoch, 10, 0));
    expect(reaped).toEqual([expect.objectContaining({ jobId: j.jobId, state: 'SCHEDULED', via: 'lease' })]);
  });

  it('a claim of a scheduler from before 016 (no check time) is looked at by the next pass, which gives it one', async () => {
    const own = await partitionClaim(db().pool, 5, 'old-sched');
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 5, own.epoch, [newJob('old-claim', Date.now() - 5)]),
    );
    // The claim's SET as the code before this migration wrote it.
    await db().pool.query(
      `UPDATE job SET state = 'DISPATCHED', attempt = attempt + 1, dispatched_at = now(), claim_epoch = $2,
                      lease_owner = NULL, lease_until = now() + interval '5 minutes'
       WHERE job_id = $1`,
      ['old-claim', own.epoch],
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 5, own.epoch, 10, 0))).toEqual([]);
    const { rows } = await db().pool.query<{ state: string; at_end: boolean }>(
      "SELECT state, lease_check_at = lease_until AS at_end FROM job WHERE job_id = 'old-claim'",
    );
    expect(rows).toEqual([{ state: 'DISPATCHED', at_end: true }]);
  });

  it('an in-flight job without a check time is refused (the reaper could never find it)', async () => {
    await expect(
      db().pool.query(
        `INSERT INTO job (job_id, partition, tenant_id, queue, state, due_at, payload, lease_until)
         VALUES ('no-check', 4, 'default', 'default', 'DISPATCHED', now(), '\\x00', now() + interval '1 minute')`,
      ),
    ).rejects.toThrow(/job_lease_check_set/);
  });
});
