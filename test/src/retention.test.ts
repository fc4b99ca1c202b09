import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  inTransaction,
  jobCancel,
  jobClaimDue,
  jobCreateBatch,
  jobSucceedMany,
  leaseAcquireMany,
  partitionClaim,
  pruneFinishedJobs,
  pruneOlderThan,
} from '@sched/store';
import { schemaForSuite } from './support/isolation.js';
import { createJob, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';
import { newJob } from './support/new-job.js';

/**
 * Finished jobs do not pile up forever: past the retention they go, with their attempts; nothing
 * pending, running or dead-lettered is touched, nor anything that ended recently.
 */
describe('store: finished-job retention against real Postgres', () => {
  const db = schemaForSuite('retain');

  it('deletes jobs that ended before the retention, with their attempts, in bounded batches', async () => {
    const own = await partitionClaim(db().pool, 0, 'sched');
    const due = Date.now() - 5;
    const ids = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}-${i}`);
    const run = ids('old-ok', 30); // succeeded long ago: pruned
    const recent = ids('new-ok', 5); // succeeded just now: kept
    const cancelled = ids('old-cancel', 4); // cancelled long ago: pruned
    const pending = ids('pending', 3); // never due yet: kept
    const dead = ids('dead', 2); // dead long ago: kept (dead-letter queue)
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 0, own.epoch, [
        ...[...run, ...recent, ...cancelled, ...dead].map((id) => newJob(id, due)),
        ...pending.map((id) => newJob(id, Date.now() + 3_600_000)),
      ]),
    );
    const claimed = await inTransaction(db().pool, (c) =>
      jobClaimDue(c, 0, own.epoch, [...run, ...recent], 60_000),
    );
    const leases = await leaseAcquireMany(
      db().pool,
      'w1',
      60_000,
      claimed.map((j) => ({
        jobId: j.jobId,
        version: j.version,
        attempt: j.attempt,
        attemptId: randomUUID(),
      })),
    );
    expect(
      (
        await jobSucceedMany(
          db().pool,
          [...leases.values()].map((lease) => ({ lease })),
        )
      ).size,
    ).toBe(35);
    // An earlier failed attempt of one pruned and one kept job: attempt rows (a success writes none).
    await db().pool.query(
      `INSERT INTO attempt (attempt_id, job_id, attempt, version, worker_id, lease_generation, ended_at, outcome)
       SELECT gen_random_uuid(), id, 1, 1, 'w0', 0, now(), 'FAILED' FROM unnest($1::text[]) AS id`,
      [[run[0], recent[0]]],
    );
    await inTransaction(db().pool, (c) => jobCancel(c, 0, own.epoch, cancelled));
    await db().pool.query(`UPDATE job SET state = 'DEAD', finished_at = now() WHERE job_id = ANY($1)`, [
      dead,
    ]);
    // Age everything that ended, except the recent ones, by eight days.
    await db().pool.query(
      `UPDATE job SET finished_at = finished_at - interval '8 days'
       WHERE finished_at IS NOT NULL AND NOT (job_id = ANY($1))`,
      [recent],
    );
    const week = 7 * 24 * 3600_000;
    // Batches of 10: 34 due for pruning go in four statements.
    const counts: number[] = [];
    for (let n = -1; n !== 0;) counts.push((n = await pruneFinishedJobs(db().pool, week, 10)));
    expect(counts).toEqual([10, 10, 10, 4, 0]);
    const { rows } = await db().pool.query<{ job_id: string }>('SELECT job_id FROM job ORDER BY job_id');
    expect(rows.map((r) => r.job_id)).toEqual([...dead, ...recent, ...pending].sort());
    const att = await db().pool.query<{ job_id: string }>('SELECT job_id FROM attempt ORDER BY job_id');
    expect(att.rows.map((r) => r.job_id)).toEqual([recent[0]]);
    const history = await db().pool.query<{ job_id: string }>(
      'SELECT DISTINCT job_id FROM attempt_history ORDER BY job_id',
    );
    expect(history.rows.map((r) => r.job_id)).toEqual([...recent].sort());
  });

  it('finds the jobs to prune by the finished-jobs index (its predicate matches the query)', async () => {
    const client = await db().pool.connect();
    try {
      // A tiny test table would be scanned whatever the indexes; forbid that to see the index is usable.
      await client.query('SET enable_seqscan = off');
      const plan = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT job_id FROM job WHERE phase = 2 AND state IN ('SUCCEEDED', 'CANCELLED', 'EXPIRED')
           AND finished_at < now() - interval '7 days' ORDER BY finished_at LIMIT 5000`,
      );
      expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('job_finished_idx');
    } finally {
      await client.query('RESET enable_seqscan');
      client.release();
    }
  });

  it('the scheduler prunes a job that ran, once it is past the retention', async () => {
    const s = await Scenario.create('retsched', 2);
    try {
      const sched = await s.startScheduler({
        SCHED_FINISHED_JOB_RETENTION_MS: '1000',
        SCHED_PRUNE_EVERY_MS: '300',
      });
      await s.startWorker();
      await s.producer.send([
        createJob('ret-1', s.queue, Date.now() + 100),
        createJob('ret-2', s.queue, Date.now() + 3_600_000),
      ]);
      await until('ret-1 ran', 20_000, async () => (await s.executions('ret-1')).length > 0);
      await until('ret-1 pruned', 20_000, async () => !(await s.jobStates()).has('ret-1'));
      expect(await sched.metric('sched_finished_jobs_pruned_total')).toBeGreaterThanOrEqual(1);
      // The pending one is untouched, and ret-1's attempts went with it.
      expect((await s.jobStates()).get('ret-2')).toBe('SCHEDULED');
      const { rows } = await s.db.pool.query("SELECT 1 FROM attempt_history WHERE job_id = 'ret-1'");
      expect(rows).toHaveLength(0);
    } finally {
      await s.close();
    }
  });
  it('prunes outbox rows (which have no key: deleted by ctid) and command ids past their retention, in batches', async () => {
    const pool = db().pool;
    await pool.query(
      `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, created_at)
       SELECT gen_random_uuid(), 'dispatch.default', 'old-' || g, 'Dispatch', '\\x00'::bytea, now() - interval '1 hour'
       FROM generate_series(1, 25) g
       UNION ALL
       SELECT gen_random_uuid(), 'dispatch.default', 'new-' || g, 'Dispatch', '\\x00'::bytea, now()
       FROM generate_series(1, 7) g`,
    );
    await pool.query(
      `INSERT INTO command_applied (command_id, partition, applied_at)
       VALUES ('old-cmd', 0, now() - interval '1 hour'), ('new-cmd', 0, now())`,
    );
    expect(await pruneOlderThan(pool, 'outbox', 60_000, 10)).toBe(10);
    expect(await pruneOlderThan(pool, 'outbox', 60_000, 10)).toBe(10);
    expect(await pruneOlderThan(pool, 'outbox', 60_000, 10)).toBe(5);
    expect(await pruneOlderThan(pool, 'outbox', 60_000, 10)).toBe(0);
    const left = await pool.query<{ aggregateid: string }>(
      "SELECT aggregateid FROM outbox WHERE aggregateid LIKE 'old-%' OR aggregateid LIKE 'new-%'",
    );
    expect(left.rows.map((r) => r.aggregateid).sort()).toEqual(
      Array.from({ length: 7 }, (_, i) => `new-${i + 1}`).sort(),
    );
    expect(await pruneOlderThan(pool, 'command_applied', 60_000)).toBe(1);
    const cmds = await pool.query<{ command_id: string }>(
      "SELECT command_id FROM command_applied WHERE command_id IN ('old-cmd', 'new-cmd')",
    );
    expect(cmds.rows.map((r) => r.command_id)).toEqual(['new-cmd']);
  });
});
