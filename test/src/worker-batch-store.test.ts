import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  inTransaction,
  jobClaimDue,
  jobCreateBatch,
  jobCancel,
  jobSucceedMany,
  leaseAcquireMany,
  partitionClaim,
  startsToAskAgain,
} from '@sched/store';
import { schemaForSuite } from './support/isolation.js';
import { newJob } from './support/new-job.js';

const job = newJob;

/**
 * The worker's batched statements keep the single-job guarantees: a start is granted only at the
 * dispatched version and attempt, once; a completion only under the current owner + generation.
 */
describe('store: batched lease starts and completions against real Postgres', () => {
  const db = schemaForSuite('wbatch');

  it('grants each valid start once, refuses stale versions and repeats, and fences completions', async () => {
    const own = await partitionClaim(db().pool, 0, 'sched');
    const ids = Array.from({ length: 50 }, (_, i) => `b-${i}`);
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(
        c,
        0,
        own.epoch,
        ids.map((id) => job(id, Date.now() - 5)),
      ),
    );
    const claimed = await inTransaction(db().pool, (c) => jobClaimDue(c, 0, own.epoch, ids, 60_000));
    expect(claimed).toHaveLength(50);
    const reqs = claimed.map((j, i) => ({
      jobId: j.jobId,
      // Every tenth request names a stale version: refused.
      version: i % 10 === 0 ? j.version + 1 : j.version,
      attempt: j.attempt,
      attemptId: randomUUID(),
    }));
    const granted = await leaseAcquireMany(db().pool, 'w1', 30_000, reqs);
    expect(granted.size).toBe(45);
    for (const [i, r] of reqs.entries()) expect(granted.has(r.attemptId)).toBe(i % 10 !== 0);
    // The same starts again (a redelivery): all refused, nothing doubled.
    const again = await leaseAcquireMany(
      db().pool,
      'w2',
      30_000,
      reqs.map((r) => ({
        ...r,
        version: claimed.find((c) => c.jobId === r.jobId)!.version,
        attemptId: randomUUID(),
      })),
    );
    expect(again.size).toBe(5); // only the five never started
    const leases = [...granted.values()];
    // A forged generation is refused and recorded on its attempt row; the rest succeed.
    const reports = leases.map((l, i) => ({ lease: i === 0 ? { ...l, generation: l.generation + 7 } : l }));
    const accepted = await jobSucceedMany(db().pool, reports);
    expect(accepted.size).toBe(44);
    expect(accepted.has(leases[0]!.attemptId)).toBe(false);
    const { rows } = await db().pool.query<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM job GROUP BY state ORDER BY state`,
    );
    expect(rows).toEqual([
      { state: 'RUNNING', n: 6 },
      { state: 'SUCCEEDED', n: 44 },
    ]);
    const att = await db().pool.query<{ outcome: string | null; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM attempt GROUP BY outcome ORDER BY outcome NULLS LAST`,
    );
    expect(att.rows).toEqual([
      { outcome: 'LEASE_LOST', n: 1 },
      { outcome: 'SUCCEEDED', n: 44 },
      { outcome: null, n: 5 },
    ]);
    // A completion repeated after success is refused (the job is no longer RUNNING).
    const twice = await jobSucceedMany(db().pool, [{ lease: leases[1]! }]);
    expect(twice.size).toBe(0);
  });

  it('completes attempts with HOT updates: the attempt row is updated on its own page', async () => {
    const own = await partitionClaim(db().pool, 1, 'sched');
    const ids = Array.from({ length: 200 }, (_, i) => `hot-${i}`);
    const client = await db().pool.connect();
    try {
      // This backend's own counters (which may still hold earlier transactions' unflushed counts).
      const counts = async () =>
        (
          await client.query<{ upd: number; hot: number }>(
            `SELECT pg_stat_get_xact_tuples_updated('attempt'::regclass)::int AS upd,
                    pg_stat_get_xact_tuples_hot_updated('attempt'::regclass)::int AS hot`,
          )
        ).rows[0]!;
      await client.query('BEGIN');
      const before = await counts();
      await jobCreateBatch(
        client,
        1,
        own.epoch,
        ids.map((id) => job(id, Date.now() - 5)),
      );
      const claimed = await jobClaimDue(client, 1, own.epoch, ids, 60_000);
      const granted = await leaseAcquireMany(
        client,
        'w-hot',
        30_000,
        claimed.map((j) => ({
          jobId: j.jobId,
          version: j.version,
          attempt: j.attempt,
          attemptId: randomUUID(),
        })),
      );
      expect(granted.size).toBe(200);
      const accepted = await jobSucceedMany(
        client,
        [...granted.values()].map((lease) => ({ lease })),
      );
      expect(accepted.size).toBe(200);
      const after = await counts();
      expect(after.upd - before.upd).toBe(200);
      // fillfactor 45 leaves room for each page's own completions (without it: 0 or a few).
      expect(after.hot - before.hot).toBeGreaterThanOrEqual(190);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  });

  it('asks again for a start refused only as early (job or claim not visible then), never for a final refusal', async () => {
    const own = await partitionClaim(db().pool, 2, 'sched');
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 2, own.epoch, [
        job('v-scheduled', Date.now() + 60_000),
        job('v-cancelled', Date.now() - 5),
        job('v-dispatched', Date.now() - 5),
        job('v-running', Date.now() - 5),
      ]),
    );
    const claimed = await inTransaction(db().pool, (c) =>
      jobClaimDue(c, 2, own.epoch, ['v-cancelled', 'v-dispatched', 'v-running'], 60_000),
    );
    const version = (id: string) => claimed.find((j) => j.jobId === id)!.version;
    await inTransaction(db().pool, (c) => jobCancel(c, 2, own.epoch, ['v-cancelled']));
    const running = await leaseAcquireMany(db().pool, 'w-1', 60_000, [
      { jobId: 'v-running', version: version('v-running'), attempt: 1, attemptId: randomUUID() },
    ]);
    expect(running.size).toBe(1);
    const again = await startsToAskAgain(db().pool, [
      { jobId: 'v-missing', version: 1, attempt: 1 }, // dispatched by a create not visible yet
      { jobId: 'v-scheduled', version: 1, attempt: 1 }, // a claim not visible yet (still at attempt 0)
      // Refused while invisible, visible by now: startable, so only visibility refused it.
      { jobId: 'v-dispatched', version: version('v-dispatched'), attempt: 1 },
      { jobId: 'v-cancelled', version: version('v-cancelled'), attempt: 1 }, // claimed, then cancelled: final
      { jobId: 'v-running', version: version('v-running'), attempt: 1 }, // started already: final
    ]);
    expect([...again].sort()).toEqual(['v-dispatched', 'v-missing', 'v-scheduled']);
    // A dispatch of an older version (rescheduled since) is final even though the job is DISPATCHED.
    const stale = await startsToAskAgain(db().pool, [
      { jobId: 'v-dispatched', version: version('v-dispatched') - 1, attempt: 1 },
    ]);
    expect(stale.size).toBe(0);
  });
});
