import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPLAY_PERMISSION, registryPayloadValidator, replayDeadLetters } from '@sched/dead-letters';
import { Collector, contracts, createJob, sleep, until } from './support/kafka.js';
import { endpoints } from './support/isolation.js';
import { Scenario } from './support/scenario.js';

// A poison job (its handler kills the worker process every time) spends a bounded budget, reaches
// the DLQ with a dead letter and its attempt history, and can be replayed. Before, a job without
// maxAttempts (the API's default) was taken back by the lease reaper and dispatched again forever,
// and a job the reaper did move to DEAD had no dead letter.

describe('a poison job on the real stack', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await Scenario.create('poison', 2);
    await s.startScheduler({ SCHED_REAP_EVERY_MS: '500' });
  });
  afterAll(async () => {
    await s?.close();
  });

  const state = async (jobId: string) =>
    (
      await s.db.pool.query<{ state: string; attempt: number }>(
        'SELECT state, attempt FROM job WHERE job_id = $1',
        [jobId],
      )
    ).rows[0];

  it('kills its worker on every attempt: dead-lettered after the default budget of 5, then replayable', async () => {
    const id = `poison-${Date.now()}`;
    const events = await new Collector(['sched.events'], false).start();
    await s.producer.send([
      createJob(id, s.queue, Date.now() + 500, {
        payload: Buffer.from(JSON.stringify({ crash: true })),
      }),
    ]);
    const t0 = Date.now();
    let workers = 0;
    // One worker at a time; each one the job kills. At most 8 (the budget is 5).
    while ((await state(id))?.state !== 'DEAD' && workers < 8) {
      const w = await s.startWorker();
      workers++;
      const died = await Promise.race([w.exited.then(() => true), sleep(30_000).then(() => false)]);
      expect(died).toBe(true);
      await until('the job taken back or dead', 30_000, async () => {
        const st = (await state(id))?.state;
        return st === 'SCHEDULED' || st === 'DISPATCHED' || st === 'DEAD';
      });
    }
    await until('DEAD', 30_000, async () => (await state(id))?.state === 'DEAD');
    const starts = (await s.executions(id)).filter((e) => e.outcome === 'started');
    expect(starts).toHaveLength(5);
    expect(workers).toBe(5);
    const dl = await s.db.pool.query(
      'SELECT failure_class, attempts, quarantined FROM dead_letter WHERE job_id = $1',
      [id],
    );
    expect(dl.rows).toEqual([{ failure_class: 'LEASE_LOST', attempts: 5, quarantined: false }]);
    const history = await s.db.pool.query(
      'SELECT outcome FROM attempt WHERE job_id = $1 ORDER BY started_at',
      [id],
    );
    expect(history.rows.map((r: { outcome: string }) => r.outcome)).toEqual(Array(5).fill('LEASE_LOST'));
    const tookMs = Date.now() - t0;
    // Its DEAD_LETTERED event, from the reaper, on sched.events.
    const c = await contracts();
    await until('the DEAD_LETTERED event', 30_000, async () => {
      for (const m of events.raw) {
        const e = await c.decodeEvent(m.value!);
        if (e.jobId === id && e.type === 'DEAD_LETTERED') return true;
      }
      return false;
    });
    await events.stop();
    // Replayable like any dead letter.
    const res = await replayDeadLetters(
      s.db.pool,
      registryPayloadValidator(s.db.pool, endpoints().registryUrl),
      {
        caller: { id: 'ops', tenantId: 'default', permissions: [REPLAY_PERMISSION] },
        jobIds: [id],
        reason: 'fixed the handler',
        ratePerSec: 10,
      },
    );
    expect(res.replayed).toEqual([id]);
    await until('scheduled again', 10_000, async () => {
      const st = (await state(id))?.state;
      return st === 'SCHEDULED' || st === 'DISPATCHED';
    });
    console.log(
      `poison job: 5 attempts, 5 workers killed, dead-lettered (LEASE_LOST) in ${tookMs} ms, replayed`,
    );
  });
});
