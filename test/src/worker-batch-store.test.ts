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
      `SELECT outcome, count(*)::int AS n FROM attempt_history GROUP BY outcome ORDER BY outcome NULLS LAST`,
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

  it('fences by the row it locks: ids with separators or multi-byte characters, a job asked for twice, a cancel committed while the start waited', async () => {
    const own = await partitionClaim(db().pool, 3, 'sched');
    const ids = ['f:1:1', 'f', 'f:1', 'é-ü-😀 job', 'f-twice', 'f-raced'];
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(
        c,
        3,
        own.epoch,
        ids.map((id) => job(id, Date.now() - 5)),
      ),
    );
    const claimed = await inTransaction(db().pool, (c) => jobClaimDue(c, 3, own.epoch, ids, 60_000));
    expect(claimed).toHaveLength(6);
    const v = (id: string) => claimed.find((j) => j.jobId === id)!.version;
    const req = (jobId: string, version = v(jobId)) => ({
      jobId,
      version,
      attempt: 1,
      attemptId: randomUUID(),
    });
    // 'f' named at a wrong version: its key may not be matched through 'f:1' or 'f:1:1'.
    const first = await leaseAcquireMany(db().pool, 'w:1', 30_000, [
      req('f:1:1'),
      req('f', v('f') + 1),
      req('f:1'),
      req('é-ü-😀 job'),
      req('f-twice'),
      req('f-twice'),
    ]);
    const jobsGranted = [...first.values()].map((l) => l.jobId).sort();
    expect(jobsGranted).toEqual(['f-twice', 'f:1', 'f:1:1', 'é-ü-😀 job'].sort());
    const attempts = await db().pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM attempt_history WHERE job_id = 'f-twice'`,
    );
    expect(attempts.rows[0]!.n).toBe(1);

    // A cancel holds f-raced's row; the start waits for it, then sees the new version: refused.
    const canceller = await db().pool.connect();
    try {
      await canceller.query('BEGIN');
      await jobCancel(canceller, 3, own.epoch, ['f-raced']);
      const start = leaseAcquireMany(db().pool, 'w:1', 30_000, [req('f-raced')]);
      await new Promise((r) => setTimeout(r, 200));
      const waiting = await db().pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
      );
      expect(waiting.rows[0]!.n).toBeGreaterThanOrEqual(1);
      await canceller.query('COMMIT');
      expect((await start).size).toBe(0);
    } finally {
      canceller.release();
    }

    // Completions. 'f' is started by an owner whose name holds ':', at generation 1, like 'f:1'.
    const fLease = await leaseAcquireMany(db().pool, '1:w', 30_000, [req('f')]);
    expect(fLease.size).toBe(1);
    const leases = [...first.values()];
    const f1 = leases.find((l) => l.jobId === 'f:1')!;
    const accepted = await jobSucceedMany(db().pool, [
      ...leases.filter((l) => l !== f1).map((lease) => ({ lease })),
      // Puts 'f' in the id list, under a wrong generation: refused.
      { lease: { ...[...fLease.values()][0]!, generation: 99 } },
      // 'f:1' by another owner at the right generation: refused, and 'f' is not touched by it.
      { lease: { ...f1, owner: 'w' } },
    ]);
    expect(accepted.size).toBe(3);
    const { rows } = await db().pool.query<{ job_id: string; state: string }>(
      `SELECT job_id, state FROM job WHERE partition = 3 ORDER BY job_id`,
    );
    expect(Object.fromEntries(rows.map((r) => [r.job_id, r.state]))).toEqual({
      f: 'RUNNING',
      'f-raced': 'CANCELLED',
      'f-twice': 'SUCCEEDED',
      'f:1': 'RUNNING',
      'f:1:1': 'SUCCEEDED',
      'é-ü-😀 job': 'SUCCEEDED',
    });
  });

  it('a start and a success write no attempt row: the job row holds the attempt, attempt_history shows it', async () => {
    const own = await partitionClaim(db().pool, 1, 'sched');
    const ids = Array.from({ length: 200 }, (_, i) => `row-${i}`);
    const client = await db().pool.connect();
    try {
      // This backend's own counters (which may still hold earlier transactions' unflushed counts).
      const counts = async () =>
        (
          await client.query<{ ins: number; upd: number }>(
            `SELECT pg_stat_get_xact_tuples_inserted('attempt'::regclass)::int AS ins,
                    pg_stat_get_xact_tuples_updated('attempt'::regclass)::int AS upd`,
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
        'w-row',
        30_000,
        claimed.map((j) => ({
          jobId: j.jobId,
          version: j.version,
          attempt: j.attempt,
          attemptId: randomUUID(),
        })),
      );
      expect(granted.size).toBe(200);
      const running = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM attempt_history
         WHERE job_id LIKE 'row-%' AND outcome IS NULL AND ended_at IS NULL AND worker_id = 'w-row'`,
      );
      expect(running.rows[0]!.n).toBe(200);
      const accepted = await jobSucceedMany(
        client,
        [...granted.values()].map((lease) => ({ lease })),
      );
      expect(accepted.size).toBe(200);
      const after = await counts();
      expect([after.ins - before.ins, after.upd - before.upd]).toEqual([0, 0]);
      const { rows } = await client.query<{ attempt_id: string; job_id: string; ok: boolean }>(
        `SELECT attempt_id, job_id, outcome = 'SUCCEEDED' AND worker_id = 'w-row' AND attempt = 1
                AND started_at <= ended_at AS ok
         FROM attempt_history WHERE job_id LIKE 'row-%'`,
      );
      expect(rows).toHaveLength(200);
      const byJob = new Map([...granted.values()].map((l) => [l.jobId, l.attemptId]));
      for (const r of rows) {
        expect(r.ok).toBe(true);
        expect(r.attempt_id).toBe(byJob.get(r.job_id));
      }
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
