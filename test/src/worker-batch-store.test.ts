import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  inTransaction,
  jobClaimDue,
  jobCreateBatch,
  jobSucceedMany,
  leaseAcquireMany,
  partitionClaim,
} from '@sched/store';
import { isolatedSchema, type IsolatedSchema } from './support/isolation.js';
import { newJob } from './support/new-job.js';

const job = newJob;

/**
 * The worker's batched statements keep the single-job guarantees: a start is granted only at the
 * dispatched version and attempt, once; a completion only under the current owner + generation.
 */
describe('store: batched lease starts and completions against real Postgres', () => {
  let db: IsolatedSchema;
  beforeAll(async () => {
    db = await isolatedSchema('wbatch');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('grants each valid start once, refuses stale versions and repeats, and fences completions', async () => {
    const own = await partitionClaim(db.pool, 0, 'sched');
    const ids = Array.from({ length: 50 }, (_, i) => `b-${i}`);
    await inTransaction(db.pool, (c) =>
      jobCreateBatch(
        c,
        0,
        own.epoch,
        ids.map((id) => job(id, Date.now() - 5)),
      ),
    );
    const claimed = await inTransaction(db.pool, (c) => jobClaimDue(c, 0, own.epoch, ids, 60_000));
    expect(claimed).toHaveLength(50);
    const reqs = claimed.map((j, i) => ({
      jobId: j.jobId,
      // Every tenth request names a stale version: refused.
      version: i % 10 === 0 ? j.version + 1 : j.version,
      attempt: j.attempt,
      attemptId: randomUUID(),
    }));
    const granted = await leaseAcquireMany(db.pool, 'w1', 30_000, reqs);
    expect(granted.size).toBe(45);
    for (const [i, r] of reqs.entries()) expect(granted.has(r.attemptId)).toBe(i % 10 !== 0);
    // The same starts again (a redelivery): all refused, nothing doubled.
    const again = await leaseAcquireMany(
      db.pool,
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
    const accepted = await jobSucceedMany(db.pool, reports);
    expect(accepted.size).toBe(44);
    expect(accepted.has(leases[0]!.attemptId)).toBe(false);
    const { rows } = await db.pool.query<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM job GROUP BY state ORDER BY state`,
    );
    expect(rows).toEqual([
      { state: 'RUNNING', n: 6 },
      { state: 'SUCCEEDED', n: 44 },
    ]);
    const att = await db.pool.query<{ outcome: string | null; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM attempt GROUP BY outcome ORDER BY outcome NULLS LAST`,
    );
    expect(att.rows).toEqual([
      { outcome: 'LEASE_LOST', n: 1 },
      { outcome: 'SUCCEEDED', n: 44 },
      { outcome: null, n: 5 },
    ]);
    // A completion repeated after success is refused (the job is no longer RUNNING).
    const twice = await jobSucceedMany(db.pool, [{ lease: leases[1]! }]);
    expect(twice.size).toBe(0);
  });
});
