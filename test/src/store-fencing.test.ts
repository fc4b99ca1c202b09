import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  FencedError,
  inTransaction,
  jobClaimDue,
  jobClaimDueAcross,
  jobCreateBatch,
  jobReconcileDue,
  leaseReap,
  partitionAdvanceOffset,
  partitionClaim,
} from '@sched/store';
import { schemaForSuite } from './support/isolation.js';
import { newJob } from './support/new-job.js';

const job = newJob;

describe('store: fencing and claims against real Postgres', () => {
  const db = schemaForSuite('store');

  it('a new owner bumps the epoch and every write of the old one matches nothing', async () => {
    const a = await partitionClaim(db().pool, 0, 'a');
    const b = await partitionClaim(db().pool, 0, 'b');
    expect(b.epoch).toBe(a.epoch + 1);
    const created = await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 0, a.epoch, [job('stale-1', Date.now())]),
    );
    expect(created.size).toBe(0);
    await expect(
      inTransaction(db().pool, (c) => partitionAdvanceOffset(c, 0, a.epoch, 5)),
    ).rejects.toBeInstanceOf(FencedError);
    const ok = await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 0, b.epoch, [job('fresh-1', Date.now() - 10)]),
    );
    expect([...ok]).toEqual(['fresh-1']);
    expect(await inTransaction(db().pool, (c) => jobClaimDue(c, 0, a.epoch, ['fresh-1'], 60_000))).toEqual(
      [],
    );
    const claimed = await inTransaction(db().pool, (c) => jobClaimDue(c, 0, b.epoch, ['fresh-1'], 60_000));
    expect(claimed.map((j) => j.jobId)).toEqual(['fresh-1']);
    expect(claimed[0]!.claimedAtMs).toBeGreaterThanOrEqual(claimed[0]!.dueAtMs);
    expect(claimed[0]!.attempt).toBe(1);
  });

  it('an epoch bump waits for the in-flight transaction of the old owner', async () => {
    const own = await partitionClaim(db().pool, 1, 'a');
    const client = await db().pool.connect();
    try {
      await client.query('BEGIN');
      await partitionAdvanceOffset(client, 1, own.epoch, 1);
      let bumped = false;
      const bump = partitionClaim(db().pool, 1, 'b').then((r) => {
        bumped = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 200));
      expect(bumped).toBe(false);
      await jobCreateBatch(client, 1, own.epoch, [job('inflight-1', Date.now() + 60_000)]);
      await client.query('COMMIT');
      expect((await bump).epoch).toBe(own.epoch + 1);
    } finally {
      client.release();
    }
    const { rows } = await db().pool.query('SELECT job_id FROM job WHERE job_id = $1', ['inflight-1']);
    expect(rows).toHaveLength(1);
  });

  it('an in-flight claim delays an epoch bump but never an apply of the same partition', async () => {
    const own = await partitionClaim(db().pool, 5, 'a');
    await inTransaction(db().pool, (c) => jobCreateBatch(c, 5, own.epoch, [job('kf-1', Date.now() - 1)]));
    const claimTx = await db().pool.connect();
    try {
      await claimTx.query('BEGIN');
      expect(await jobClaimDue(claimTx, 5, own.epoch, ['kf-1'], 60_000)).toHaveLength(1); // holds the fence
      // The owner's apply goes through meanwhile (no lock conflict between its own writes)…
      const t0 = Date.now();
      await inTransaction(db().pool, (c) => partitionAdvanceOffset(c, 5, own.epoch, 7));
      expect(Date.now() - t0).toBeLessThan(1_000);
      // …but a new owner's bump waits for the claim to end.
      let bumped = false;
      const bump = partitionClaim(db().pool, 5, 'b').then((r) => ((bumped = true), r));
      await new Promise((r) => setTimeout(r, 300));
      expect(bumped).toBe(false);
      await claimTx.query('COMMIT');
      expect((await bump).epoch).toBe(own.epoch + 1);
    } finally {
      claimTx.release();
    }
  });

  it('never claims a job before its due time in database time', async () => {
    const own = await partitionClaim(db().pool, 2, 'a');
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 2, own.epoch, [job('future-1', Date.now() + 5_000)]),
    );
    expect(await inTransaction(db().pool, (c) => jobClaimDue(c, 2, own.epoch, ['future-1'], 60_000))).toEqual(
      [],
    );
    expect(
      await inTransaction(db().pool, (c) =>
        jobReconcileDue(c, [{ partition: 2, epoch: own.epoch }], 100, 60_000, 0),
      ),
    ).toEqual([]);
  });

  it('reconciliation skips rows locked by a concurrent claimer instead of blocking', async () => {
    const own = await partitionClaim(db().pool, 3, 'a');
    const due = Date.now() - 10_000;
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 3, own.epoch, [job('r-1', due), job('r-2', due + 1), job('r-3', due + 2)]),
    );
    const holder = await db().pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM job WHERE job_id = 'r-1' FOR UPDATE");
      const t0 = Date.now();
      const got = await inTransaction(db().pool, (c) =>
        jobReconcileDue(c, [{ partition: 3, epoch: own.epoch }], 10, 60_000, 0),
      );
      expect(Date.now() - t0).toBeLessThan(2_000);
      expect(got.map((j) => j.jobId).sort()).toEqual(['r-2', 'r-3']);
      // A stale epoch takes no part.
      await db().pool.query("UPDATE job SET state = 'SCHEDULED' WHERE job_id IN ('r-2','r-3')");
      expect(
        await inTransaction(db().pool, (c) =>
          jobReconcileDue(c, [{ partition: 3, epoch: own.epoch - 1 }], 10, 60_000, 0),
        ),
      ).toEqual([]);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
  });

  it('a firing round skips a job row another transaction holds instead of waiting for it', async () => {
    const own = await partitionClaim(db().pool, 5, 'a');
    const due = Date.now() - 10;
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 5, own.epoch, [job('held-1', due), job('held-2', due), job('held-3', due)]),
    );
    const holder = await db().pool.connect();
    try {
      // As the reconciler's catch-up would, mid-claim.
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM job WHERE job_id = 'held-2' FOR UPDATE");
      const out = await inTransaction(db().pool, async (c) => {
        // Waiting for the held row would fail the statement rather than hang the test.
        await c.query("SET LOCAL lock_timeout = '2s'");
        return jobClaimDueAcross(
          c,
          [{ partition: 5, epoch: own.epoch }],
          ['held-1', 'held-2', 'held-3'],
          60_000,
        );
      });
      expect(out.claimed.map((j) => j.jobId).sort()).toEqual(['held-1', 'held-3']);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    // Released and still SCHEDULED: the next claim (or the reconciler) takes it.
    const later = await inTransaction(db().pool, (c) =>
      jobClaimDueAcross(c, [{ partition: 5, epoch: own.epoch }], ['held-2'], 60_000),
    );
    expect(later.claimed.map((j) => j.jobId)).toEqual(['held-2']);
  });

  it("a fenced round of an old owner locks none of its rows, so the new owner's round takes them all", async () => {
    const old = await partitionClaim(db().pool, 9, 'old');
    const due = Date.now() - 10;
    const ids = ['handoff-1', 'handoff-2', 'handoff-3'];
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(
        c,
        9,
        old.epoch,
        ids.map((id) => job(id, due)),
      ),
    );
    const fresh = await partitionClaim(db().pool, 9, 'new');
    const stale = await db().pool.connect();
    try {
      // The old owner, still firing until it learns of the bump: its round claims nothing and,
      // in flight, must hold no row the new owner asks for.
      await stale.query('BEGIN');
      const fenced = await jobClaimDueAcross(stale, [{ partition: 9, epoch: old.epoch }], ids, 60_000);
      expect(fenced.claimed).toEqual([]);
      expect([...fenced.current]).toEqual([]);
      const out = await inTransaction(db().pool, async (c) => {
        await c.query("SET LOCAL lock_timeout = '2s'");
        return jobClaimDueAcross(c, [{ partition: 9, epoch: fresh.epoch }], ids, 60_000);
      });
      expect(out.claimed.map((j) => j.jobId).sort()).toEqual(ids);
      await stale.query('COMMIT');
    } finally {
      stale.release();
    }
  });

  it('the lease reaper returns an expired dispatch no worker started to SCHEDULED, giving its attempt back', async () => {
    const own = await partitionClaim(db().pool, 4, 'a');
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 4, own.epoch, [{ ...job('lease-1', Date.now() - 1), priority: 3 }]),
    );
    await inTransaction(db().pool, (c) => jobClaimDue(c, 4, own.epoch, ['lease-1'], 1));
    await new Promise((r) => setTimeout(r, 50));
    const reaped = await inTransaction(db().pool, (c) => leaseReap(c, 4, own.epoch, 10, 0));
    // Tenant and priority come back too: the reaped job re-enters the wheel with its fair-firing tag.
    expect(reaped).toEqual([
      expect.objectContaining({
        jobId: 'lease-1',
        attempt: 0, // never started: the dispatch spent no attempt (migration 017)
        state: 'SCHEDULED',
        tenantId: 'default',
        priority: 3,
      }),
    ]);
    const stale = await inTransaction(db().pool, (c) => leaseReap(c, 4, own.epoch - 1, 10, 0));
    expect(stale).toEqual([]);
    const { rows } = await db().pool.query(
      "SELECT attempt, lapsed_dispatches FROM job WHERE job_id = 'lease-1'",
    );
    expect(rows).toEqual([{ attempt: 0, lapsed_dispatches: 1 }]);
  });

  it('the lease reaper dead-letters a job past its budgets: lost leases (LEASE_LOST), unstarted dispatches (NEVER_STARTED)', async () => {
    const own = await partitionClaim(db().pool, 4, 'a');
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 4, own.epoch, [job('lost-3', Date.now() - 1), job('unstarted-2', Date.now() - 1)]),
    );
    const budget = { maxAttempts: 3, maxUnstartedDispatches: 2, poisonAfterReplays: 3 };
    const cycle = async (start: boolean) => {
      await inTransaction(db().pool, (c) => jobClaimDue(c, 4, own.epoch, ['lost-3', 'unstarted-2'], 1));
      if (start)
        await db().pool.query(
          `UPDATE job SET state = 'RUNNING', lease_owner = 'w', lease_generation = lease_generation + 1,
                  lease_until = now(), attempt_id = gen_random_uuid(), started_at = now() WHERE job_id = 'lost-3'`,
        );
      await new Promise((r) => setTimeout(r, 20));
      return inTransaction(db().pool, (c) => leaseReap(c, 4, own.epoch, 10, 0, [], budget));
    };
    const first = await cycle(true);
    expect(first.map((r) => [r.jobId, r.state, r.attempt]).sort()).toEqual([
      ['lost-3', 'SCHEDULED', 1],
      ['unstarted-2', 'SCHEDULED', 0],
    ]);
    const second = await cycle(true);
    expect(second.find((r) => r.jobId === 'unstarted-2')).toMatchObject({
      state: 'DEAD',
      failureClass: 'NEVER_STARTED',
    });
    const third = await cycle(true);
    expect(third).toEqual([
      expect.objectContaining({ jobId: 'lost-3', state: 'DEAD', attempt: 3, failureClass: 'LEASE_LOST' }),
    ]);
    const dl = await db().pool.query(
      "SELECT job_id, failure_class, attempts FROM dead_letter WHERE job_id IN ('lost-3', 'unstarted-2') ORDER BY job_id",
    );
    expect(dl.rows).toEqual([
      { job_id: 'lost-3', failure_class: 'LEASE_LOST', attempts: 3 },
      { job_id: 'unstarted-2', failure_class: 'NEVER_STARTED', attempts: 0 },
    ]);
  });

  describe('attempts started before migration 008 (an open attempt row, nothing on the job row)', () => {
    // What a start of the old code left: the job RUNNING under a lease, its attempt row open.
    async function oldStart(jobId: string): Promise<string> {
      const attemptId = randomUUID();
      await db().pool.query(
        `WITH j AS (
           UPDATE job SET state = 'RUNNING', lease_owner = 'old-worker', lease_generation = lease_generation + 1,
                          lease_until = now() - interval '1 second', lease_check_at = now() - interval '1 second'
           WHERE job_id = $1 RETURNING job_id, attempt, version, lease_generation)
         INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation)
         SELECT $2, job_id, attempt, version, 'old-worker', lease_generation FROM j`,
        [jobId, attemptId],
      );
      return attemptId;
    }
    async function legacyStart(jobId: string, partition: number, epoch: number): Promise<string> {
      await inTransaction(db().pool, (c) =>
        jobCreateBatch(c, partition, epoch, [job(jobId, Date.now() - 1)]),
      );
      await inTransaction(db().pool, (c) => jobClaimDue(c, partition, epoch, [jobId], 60_000));
      return oldStart(jobId);
    }
    const history = async (jobId: string) =>
      (
        await db().pool.query<{ attempt_id: string; outcome: string | null; ended: boolean }>(
          'SELECT attempt_id, outcome, ended_at IS NOT NULL AS ended FROM attempt_history WHERE job_id = $1',
          [jobId],
        )
      ).rows;

    it('the reaper closes the open row as LEASE_LOST, and writes no second one', async () => {
      const own = await partitionClaim(db().pool, 9, 'a');
      const attemptId = await legacyStart('legacy-reaped', 9, own.epoch);
      const reaped = await inTransaction(db().pool, (c) => leaseReap(c, 9, own.epoch, 10, 0));
      expect(reaped.map((r) => r.jobId)).toEqual(['legacy-reaped']);
      expect(await history('legacy-reaped')).toEqual([
        { attempt_id: attemptId, outcome: 'LEASE_LOST', ended: true },
      ]);
    });

    it('the reaper closes it too when the job row still names an earlier attempt of newer code', async () => {
      const own = await partitionClaim(db().pool, 11, 'a');
      // An earlier attempt by a new worker failed: its row is written, the job row keeps its id,
      // and the job is due again.
      const earlier = randomUUID();
      await inTransaction(db().pool, (c) =>
        jobCreateBatch(c, 11, own.epoch, [job('legacy-after-new', Date.now() - 1)]),
      );
      await inTransaction(db().pool, (c) => jobClaimDue(c, 11, own.epoch, ['legacy-after-new'], 60_000));
      await db().pool.query(
        `WITH j AS (UPDATE job SET state = 'SCHEDULED', attempt_id = $2, started_at = now()
                    WHERE job_id = $1 RETURNING job_id, attempt, version, lease_generation)
         INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation, ended_at, outcome)
         SELECT $2, job_id, attempt, version, 'new-worker', lease_generation, now(), 'FAILED' FROM j`,
        ['legacy-after-new', earlier],
      );
      // Then an old worker starts it: claimed again, then the old start.
      await inTransaction(db().pool, (c) => jobClaimDue(c, 11, own.epoch, ['legacy-after-new'], 60_000));
      const attemptId = await oldStart('legacy-after-new');
      const reaped = await inTransaction(db().pool, (c) => leaseReap(c, 11, own.epoch, 10, 0));
      expect(reaped.map((r) => r.jobId)).toEqual(['legacy-after-new']);
      const rows = await history('legacy-after-new');
      expect(rows).toHaveLength(2);
      expect(rows).toEqual(
        expect.arrayContaining([
          { attempt_id: earlier, outcome: 'FAILED', ended: true },
          { attempt_id: attemptId, outcome: 'LEASE_LOST', ended: true },
        ]),
      );
    });

    it('migration 009 closes rows whose job moved on, and leaves a running attempt open', async () => {
      const own = await partitionClaim(db().pool, 10, 'a');
      const moved = await legacyStart('legacy-moved', 10, own.epoch);
      const running = await legacyStart('legacy-running', 10, own.epoch);
      // The old reaper took legacy-moved back without touching its row.
      await db().pool.query(
        `UPDATE job SET state = 'SCHEDULED', lease_owner = NULL, lease_until = NULL WHERE job_id = $1`,
        ['legacy-moved'],
      );
      const sql = await readFile(
        new URL('../../libs/store/migrations/009_close_legacy_attempts.sql', import.meta.url),
        'utf8',
      );
      await db().pool.query(sql);
      expect(await history('legacy-moved')).toEqual([
        { attempt_id: moved, outcome: 'LEASE_LOST', ended: false },
      ]);
      expect(await history('legacy-running')).toEqual([{ attempt_id: running, outcome: null, ended: false }]);
    });
  });

  it('a claim across partitions reports which epochs are current and claims only theirs', async () => {
    const a = await partitionClaim(db().pool, 7, 'x');
    const b = await partitionClaim(db().pool, 8, 'x');
    const now = Date.now() - 5;
    await inTransaction(db().pool, (c) => jobCreateBatch(c, 7, a.epoch, [job('across-7', now)]));
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 8, b.epoch, [job('across-8', now), job('later-8', now + 60_000)]),
    );
    const b2 = await partitionClaim(db().pool, 8, 'y'); // partition 8 moves on: x's epoch is stale
    const out = await inTransaction(db().pool, (c) =>
      jobClaimDueAcross(
        c,
        [
          { partition: 7, epoch: a.epoch },
          { partition: 8, epoch: b.epoch },
        ],
        ['across-7', 'across-8', 'later-8'],
        60_000,
      ),
    );
    expect([...out.current]).toEqual([7]);
    expect(out.claimed.map((j) => [j.jobId, j.partition, j.epoch])).toEqual([['across-7', 7, a.epoch]]);
    expect(out.nowMs).toBeGreaterThanOrEqual(now);
    // The current owner of 8 claims its due job; the one not yet due stays.
    const mine = await inTransaction(db().pool, (c) =>
      jobClaimDueAcross(c, [{ partition: 8, epoch: b2.epoch }], ['across-8', 'later-8'], 60_000),
    );
    expect(mine.claimed.map((j) => j.jobId)).toEqual(['across-8']);
    // Nothing due: still one answer, with database time and the current epochs.
    const none = await inTransaction(db().pool, (c) =>
      jobClaimDueAcross(c, [{ partition: 8, epoch: b2.epoch }], ['later-8'], 60_000),
    );
    expect(none.claimed).toEqual([]);
    expect([...none.current]).toEqual([8]);
  });
});
