import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type pg from 'pg';
import {
  inTransaction,
  jobClaimDueAcross,
  jobCreateBatch,
  jobLoadWindow,
  jobOverdueFair,
  jobReconcileDue,
  jobSucceedMany,
  leaseAcquireMany,
  leaseReap,
  partitionClaim,
  pruneFinishedJobs,
  queueDepth,
} from '@sched/store';
import { schemaForSuite } from './support/isolation.js';
import { newJob } from './support/new-job.js';

/**
 * The batched claim updates its rows by one index scan over the id list; start and success update
 * each requested job by its key, in one nested loop over the sorted requests. Joined back to the looked-up rows (`job_id = t.job_id AND job_id = ANY(...)`), Postgres ran
 * a nested loop whose every inner rescan re-sorted the whole array: quadratic in the batch. The
 * plans are read through auto_explain, sent to this client as notices; no timing is asserted.
 */
describe('store: plans of the batched statements', () => {
  const db = schemaForSuite('bplans');

  async function plansOf<T>(
    fn: (c: pg.ClientBase) => Promise<T>,
    analyze = false,
  ): Promise<{ out: T; plans: string }> {
    const client = await db().pool.connect();
    const notices: string[] = [];
    const onNotice = (n: { message?: string }) => notices.push(n.message ?? '');
    client.on('notice', onNotice);
    try {
      await client.query("LOAD 'auto_explain'");
      await client.query(
        "SET auto_explain.log_min_duration = 0; SET auto_explain.log_level = 'notice'; SET auto_explain.log_nested_statements = on",
      );
      await client.query(`SET auto_explain.log_analyze = ${analyze ? 'on' : 'off'}`);
      const out = await fn(client);
      return { out, plans: notices.join('\n') };
    } finally {
      client.off('notice', onNotice);
      await client.query('SET auto_explain.log_min_duration = -1');
      client.release();
    }
  }

  /** Index conditions of a scan joined per row to a looked-up id, together with the id list. */
  const perRowJoin = /Index Cond: \(\(job_id = \w+\.job_id\) AND \(job_id = ANY/;
  const partialIndex = /job_lease_idx|job_due_idx|job_finished_idx/;

  it('claim, start and success update each job once, by its key', async () => {
    const own = await partitionClaim(db().pool, 0, 'sched');
    const ids = Array.from({ length: 300 }, (_, i) => `plan-${String(i).padStart(3, '0')}`);
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(
        c,
        0,
        own.epoch,
        ids.map((id) => newJob(id, Date.now() - 5)),
      ),
    );

    const claim = await plansOf((c) =>
      jobClaimDueAcross(c, [{ partition: 0, epoch: own.epoch }], ids, 60_000),
    );
    expect(claim.out.claimed).toHaveLength(300);
    expect(claim.plans).toMatch(/Update on job/);
    expect(claim.plans).not.toMatch(perRowJoin);

    const reqs = claim.out.claimed.map((j) => ({
      jobId: j.jobId,
      version: j.version,
      attempt: j.attempt,
      attemptId: randomUUID(),
    }));
    const start = await plansOf((c) => leaseAcquireMany(c, 'w1', 30_000, reqs));
    expect(start.out.size).toBe(300);
    expect(start.plans).toMatch(/Update on job/);
    expect(start.plans).not.toMatch(perRowJoin);
    // Start and success never reach a job through a partial index on the state (which stale
    // statistics made the planner walk once per request). On this small table a scan is cheapest;
    // on a big one each job is looked up by key.
    expect(start.plans).not.toMatch(partialIndex);

    const done = await plansOf((c) =>
      jobSucceedMany(
        c,
        [...start.out.values()].map((lease) => ({ lease })),
      ),
    );
    expect(done.out.size).toBe(300);
    expect(done.plans).toMatch(/Update on job/);
    expect(done.plans).not.toMatch(perRowJoin);
    expect(done.plans).not.toMatch(partialIndex);
  });

  it('the scans of pending, in-flight and finished rows can use the partial indexes (they name the phase)', async () => {
    // The indexes filter on `phase` (migration 016); a scan that says only `state` matches none of
    // them and walks the whole table, which nothing else here would notice. Table scans are priced
    // out so that the plan shows which index a statement can use.
    const own = await partitionClaim(db().pool, 6, 'sched');
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 6, own.epoch, [
        newJob('idx-a', Date.now() - 60_000),
        newJob('idx-b', Date.now() - 60_000),
      ]),
    );
    const noScan = <T>(fn: (c: pg.ClientBase) => Promise<T>) =>
      plansOf(async (c) => {
        await c.query('SET enable_seqscan = off');
        try {
          return await fn(c);
        } finally {
          await c.query('RESET enable_seqscan');
        }
      });
    const owned = [{ partition: 6, epoch: own.epoch }];
    const window = await noScan(async (c) => {
      const pages = [];
      for await (const page of jobLoadWindow(c as unknown as pg.Pool, 6, null, Date.now() + 60_000))
        pages.push(page);
      return pages.flat();
    });
    expect(window.out).toHaveLength(2);
    expect(window.plans).toMatch(/job_due_idx/);
    const overdue = await noScan((c) => jobOverdueFair(c, [6], 10, 1_000));
    expect(overdue.out).toHaveLength(2);
    expect(overdue.plans).toMatch(/job_due_idx/);
    const depth = await noScan((c) => queueDepth(c, { partitions: [6], graceMs: 1_000 }));
    expect(depth.out).toEqual([expect.objectContaining({ overdue: 2 })]);
    expect(depth.plans).toMatch(/job_due_idx[\s\S]*job_lease_idx|job_lease_idx[\s\S]*job_due_idx/);
    const reconciled = await noScan((c) => jobReconcileDue(c, owned, 10, 60_000, 1_000));
    expect(reconciled.out).toHaveLength(2);
    expect(reconciled.plans).toMatch(/job_due_idx/);
    const reaped = await noScan((c) => leaseReap(c, 6, own.epoch, 10, 0, ['w-gone']));
    expect(reaped.out).toEqual([]);
    expect(reaped.plans).toMatch(/job_lease_idx/);
    expect(reaped.plans).not.toMatch(/Seq Scan on job/);
    const pruned = await noScan((c) => pruneFinishedJobs(c, 60_000));
    expect(pruned.out).toBe(0);
    expect(pruned.plans).toMatch(/job_finished_idx/);
  });

  it('a claim across several partitions scans the id list once and stamps each row with its own epoch', async () => {
    const partitions = [1, 2, 3, 4];
    const owned = [];
    for (const p of partitions) owned.push(await partitionClaim(db().pool, p, 'sched'));
    // A second bump of partition 2 gives the held partitions different epochs (1, 2, 1), so a row
    // stamped with another partition's epoch shows.
    owned[1] = await partitionClaim(db().pool, 2, 'sched');
    expect(owned.map((o) => o.epoch)).toEqual([1, 2, 1, 1]);
    const ids: string[] = [];
    for (const o of owned) {
      const mine = Array.from(
        { length: 50 },
        (_, i) => `across-${o.partition}-${String(i).padStart(2, '0')}`,
      );
      await inTransaction(db().pool, (c) =>
        jobCreateBatch(
          c,
          o.partition,
          o.epoch,
          mine.map((id) => newJob(id, Date.now() - 5)),
        ),
      );
      ids.push(...mine);
    }
    // Partition 4's jobs are in the list, but the claim does not hold it.
    const held = owned.slice(0, 3).map((o) => ({ partition: o.partition, epoch: o.epoch }));
    const claim = await plansOf((c) => jobClaimDueAcross(c, held, ids, 60_000), true);
    expect(claim.out.claimed).toHaveLength(150);
    const epochOf = new Map(owned.map((o) => [o.partition, o.epoch]));
    for (const j of claim.out.claimed) {
      expect(j.partition).not.toBe(4);
      expect(j.epoch).toBe(epochOf.get(j.partition));
    }
    const { rows } = await db().pool.query<{ partition: number; claim_epoch: string }>(
      'SELECT partition, claim_epoch FROM job WHERE job_id = ANY($1) AND claim_epoch IS NOT NULL',
      [ids],
    );
    expect(rows).toHaveLength(150);
    for (const r of rows) expect(Number(r.claim_epoch)).toBe(epochOf.get(r.partition));
    // The update is joined to nothing: joined to the owned partitions, a plan rescanned the whole
    // id list once per partition (a nested loop under load; a hash join on a table this small).
    const update = claim.plans.slice(
      claim.plans.indexOf('CTE claimed'),
      claim.plans.indexOf('CTE Scan on claimed'),
    );
    expect(update).toMatch(/Update on job/);
    expect(update).not.toMatch(/Join|Nested Loop/);
    const scans = [
      ...claim.plans.matchAll(
        /Index Scan (?:using job_pkey on job \w+|on job_pkey) .*loops=(\d+)\)\n\s+Index Cond: \(job_id = ANY/g,
      ),
    ];
    expect(scans.length).toBeGreaterThan(0);
    for (const m of scans) expect(m[1]).toBe('1');
    // The rows to lock are looked up once per id, and filtered to the owned partitions in that
    // lookup: a second filter of them by `owners` (a semi-join) made a table without statistics
    // (a fresh schema, a burst before autovacuum's first analyze) run every lookup once per owned
    // partition (12 × 2,000 in a round: 57 of its 103 ms).
    const target = claim.plans.slice(claim.plans.indexOf('CTE target'), claim.plans.indexOf('CTE admitted'));
    expect(target).toMatch(/LockRows/);
    expect(target).not.toMatch(/Semi Join|Join Filter|Hash Join/);
    const lookups = [...target.matchAll(/Index Scan using job_pkey on job .*loops=(\d+)\)/g)];
    expect(lookups).toHaveLength(1);
    expect(lookups[0]![1]).toBe(String(ids.length));
  });
});
