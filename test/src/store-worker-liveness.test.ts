import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  inTransaction,
  jobClaimDue,
  jobCreateBatch,
  leaseAcquireMany,
  leaseReap,
  partitionClaim,
  workerBeat,
  workerGone,
  workerList,
  workersGone,
} from '@sched/store';
import { schemaForSuite } from './support/isolation.js';
import { newJob } from './support/new-job.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('store: worker liveness against real Postgres (migration 013)', () => {
  const db = schemaForSuite('liveness');

  /** Jobs of `partition` created, claimed and started by `owner` under a lease of a minute. */
  async function running(partition: number, epoch: number, owner: string, ids: string[]): Promise<void> {
    await inTransaction(db().pool, (c) =>
      jobCreateBatch(
        c,
        partition,
        epoch,
        ids.map((id) => newJob(id, Date.now() - 1)),
      ),
    );
    await inTransaction(db().pool, (c) => jobClaimDue(c, partition, epoch, ids, 60_000));
    const granted = await leaseAcquireMany(
      db().pool,
      owner,
      60_000,
      ids.map((jobId) => ({ jobId, version: 1, attempt: 1, attemptId: randomUUID() })),
    );
    expect(granted.size).toBe(ids.length);
  }

  /** `workersGone`, of the given ids only (the tests share one schema). */
  const goneOf = async (ids: string[], windowMs = 60_000) =>
    (await workersGone(db().pool, windowMs)).filter((g) => ids.includes(g.workerId));

  const states = async (ids: string[]) => {
    const { rows } = await db().pool.query<{ job_id: string; state: string }>(
      'SELECT job_id, state FROM job WHERE job_id = ANY($1) ORDER BY job_id',
      [ids],
    );
    return Object.fromEntries(rows.map((r) => [r.job_id, r.state]));
  };

  it('a process that stopped beating: its running jobs are taken back before their leases end, fenced', async () => {
    const own = await partitionClaim(db().pool, 0, 'sched-a');
    const inc = randomUUID();
    expect((await workerBeat(db().pool, 'w-dead', inc, 300)).replaced).toBeNull();
    await running(0, own.epoch, 'w-dead', ['d-1', 'd-2']);
    // Alive, and the leases hold: nothing to reap, even when asked to look at it.
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 0, own.epoch, 10, 0, ['w-dead']))).toEqual([]);
    expect(await goneOf(['w-dead'])).toEqual([]);
    await sleep(400);
    const gone = await goneOf(['w-dead']);
    expect(gone).toEqual([expect.objectContaining({ workerId: 'w-dead', incarnation: inc, dead: true })]);
    // Without the liveness look, the leases (a minute) still hold them.
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 0, own.epoch, 10, 0))).toEqual([]);
    // A stale epoch takes nothing.
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 0, own.epoch - 1, 10, 0, ['w-dead']))).toEqual(
      [],
    );
    const reaped = await inTransaction(db().pool, (c) => leaseReap(c, 0, own.epoch, 10, 0, ['w-dead']));
    expect(reaped.map((r) => [r.jobId, r.state, r.via]).sort()).toEqual([
      ['d-1', 'SCHEDULED', 'worker_gone'],
      ['d-2', 'SCHEDULED', 'worker_gone'],
    ]);
    const { rows } = await db().pool.query<{ outcome: string; error: string; worker_id: string }>(
      "SELECT outcome, error, worker_id FROM attempt WHERE job_id = 'd-1'",
    );
    expect(rows).toEqual([
      {
        outcome: 'LEASE_LOST',
        error: 'worker gone (liveness): reclaimed by the reaper',
        worker_id: 'w-dead',
      },
    ]);
    expect(await states(['d-1', 'd-2'])).toEqual({ 'd-1': 'SCHEDULED', 'd-2': 'SCHEDULED' });
  });

  it('a new process under the same worker id orphans what the old one had running, not its own jobs', async () => {
    const own = await partitionClaim(db().pool, 1, 'sched-a');
    const first = randomUUID();
    await workerBeat(db().pool, 'w-pod', first, 60_000);
    await running(1, own.epoch, 'w-pod', ['r-old']);
    // The pod restarts under its name: a new incarnation's first beat takes the row over.
    const second = randomUUID();
    const beat = await workerBeat(db().pool, 'w-pod', second, 60_000);
    expect(beat.replaced).toEqual(expect.objectContaining({ incarnation: first }));
    await running(1, own.epoch, 'w-pod', ['r-new']);
    expect(await goneOf(['w-pod'])).toEqual([
      expect.objectContaining({ workerId: 'w-pod', incarnation: second, dead: false }),
    ]);
    const reaped = await inTransaction(db().pool, (c) => leaseReap(c, 1, own.epoch, 10, 0, ['w-pod']));
    expect(reaped.map((r) => [r.jobId, r.via])).toEqual([['r-old', 'worker_gone']]);
    expect(await states(['r-new', 'r-old'])).toEqual({ 'r-new': 'RUNNING', 'r-old': 'SCHEDULED' });
    // Its own beats after that replace nothing.
    expect((await workerBeat(db().pool, 'w-pod', second, 60_000, false)).replaced).toBeNull();
    // The old process, were it still alive (two processes configured with one id), does not take
    // the row back with a later beat: it is told, and the new one's jobs stay orphan-free.
    const late = await workerBeat(db().pool, 'w-pod', first, 60_000, false);
    expect(late.aliveUntilMs).toBeNull();
    expect(late.replaced).toEqual(expect.objectContaining({ incarnation: second }));
    expect(await goneOf(['w-pod'])).toEqual([expect.objectContaining({ incarnation: second })]);
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 1, own.epoch, 10, 0, ['w-pod']))).toEqual([]);
  });

  it('`sched workers` prints the liveness rows; extra words are a usage error', async () => {
    await workerBeat(db().pool, 'w-cli', randomUUID(), 60_000);
    const cli = (...words: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', ...words], {
        env: { ...process.env, DATABASE_URL: db().databaseUrl, SCHED_DB_SCHEMA: db().schema },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const out = cli('workers');
    expect(out.status).toBe(0);
    const rows = JSON.parse(out.stdout) as { workerId: string; alive: boolean; running: number }[];
    expect(rows.find((r) => r.workerId === 'w-cli')).toMatchObject({ alive: true, running: 0 });
    const bad = cli('workers', 'now');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('workers');
  });

  it('an alive process is never reaped by name alone; one that stopped in good order is gone at once', async () => {
    const own = await partitionClaim(db().pool, 2, 'sched-a');
    const inc = randomUUID();
    await workerBeat(db().pool, 'w-live', inc, 60_000);
    await running(2, own.epoch, 'w-live', ['l-1']);
    expect(await inTransaction(db().pool, (c) => leaseReap(c, 2, own.epoch, 10, 0, ['w-live']))).toEqual([]);
    const listed = (await workerList(db().pool)).find((w) => w.workerId === 'w-live');
    expect(listed).toEqual(expect.objectContaining({ alive: true, running: 1, incarnation: inc }));
    // A stop by another incarnation's hand does nothing; its own marks it gone.
    await workerGone(db().pool, 'w-live', randomUUID());
    expect(await goneOf(['w-live'])).toEqual([]);
    await workerGone(db().pool, 'w-live', inc);
    await sleep(5);
    expect((await goneOf(['w-live'])).map((g) => g.workerId)).toEqual(['w-live']);
    const reaped = await inTransaction(db().pool, (c) => leaseReap(c, 2, own.epoch, 10, 0, ['w-live']));
    expect(reaped.map((r) => r.jobId)).toEqual(['l-1']);
    // Outside the window it is no longer listed (its jobs are left to their leases).
    await sleep(20);
    expect(await goneOf(['w-live'], 10)).toEqual([]);
  });
});
