import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJob, sleep, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// Backpressure: workers that start jobs at a tenth of the arrival rate, for longer than the
// dispatch lease. Without admission control every due job is dispatched at once; those no worker
// starts within the lease are taken back and dispatched again (and again), piling up on the
// dispatch topic. With it, a queue with too many dispatched-not-started jobs is not claimed: its
// jobs wait as due backlog and drain afterwards, each dispatched once, none lost.

const N = 300;
// The mark bounds how long a dispatched job waits for a start at the workers' pace: 10 jobs at 10 a
// second, 1 s, well inside the 6 s lease (size SCHED_QUEUE_MAX_UNSTARTED below lease x start rate).
const SCHEDULER = {
  SCHED_DISPATCH_LEASE_MS: '6000',
  SCHED_QUEUE_MAX_UNSTARTED: '10',
  SCHED_ADMISSION_EVERY_MS: '100',
  SCHED_REAP_EVERY_MS: '500',
  SCHED_RECONCILE_EVERY_MS: '500',
};

describe('admission control under overload, on the real stack', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await Scenario.create('overload', 2);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('workers at a tenth of the arrival rate: no job dispatched twice without a start; the backlog waits and drains', async () => {
    const a = await s.startScheduler(SCHEDULER);
    await s.startWorker({ TEST_QUEUE_RATE: '10' });
    // 300 jobs due over 3 s (100 a second); the worker starts 10 a second: 30 s of overload.
    const t0 = Date.now() + 2_000;
    await s.producer.send(
      Array.from({ length: N }, (_, i) => createJob(`ov-${i}`, s.queue, t0 + Math.floor((i * 3_000) / N))),
    );
    let maxBacklog = 0;
    let gaugeMax = 0;
    let maxUnstarted = 0;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const { rows } = await s.db.pool.query<{ backlog: number; unstarted: number; done: number }>(
        `SELECT count(*) FILTER (WHERE state = 'SCHEDULED' AND due_at < now())::int AS backlog,
                count(*) FILTER (WHERE state = 'DISPATCHED')::int AS unstarted,
                count(*) FILTER (WHERE state = 'SUCCEEDED')::int AS done
         FROM job WHERE job_id LIKE 'ov-%'`,
      );
      const r = rows[0]!;
      maxBacklog = Math.max(maxBacklog, r.backlog);
      maxUnstarted = Math.max(maxUnstarted, r.unstarted);
      gaugeMax = Math.max(gaugeMax, await a.metric('sched_queue_unstarted_jobs', { queue: s.queue }));
      if (r.done === N) break;
      if (Date.now() > deadline) throw new Error(`not drained: ${JSON.stringify(r)}`);
      await sleep(250);
    }
    const drainedMs = Date.now() - t0;
    // Each job dispatched once and started once; none lost.
    const dispatches = new Map<string, number>();
    for (const d of s.collector.seen.filter((x) => x.record.jobId.startsWith('ov-')))
      dispatches.set(d.record.jobId, (dispatches.get(d.record.jobId) ?? 0) + 1);
    const starts = new Map<string, number>();
    for (const e of (await s.executions()).filter(
      (x) => x.job_id.startsWith('ov-') && x.outcome === 'started',
    ))
      starts.set(e.job_id, (starts.get(e.job_id) ?? 0) + 1);
    expect(starts.size).toBe(N);
    const twiceWithoutStart = [...dispatches].filter(([id, n]) => n > (starts.get(id) ?? 0));
    expect(twiceWithoutStart).toEqual([]);
    // Each claim took at most the queue's room: the depth stayed at the mark (10), give or take
    // the claims between two counts.
    expect(maxUnstarted).toBeLessThanOrEqual(20);
    expect(gaugeMax).toBeGreaterThan(0);
    expect(maxBacklog).toBeGreaterThan(100); // the due backlog grew instead
    await until(
      'admission resumed',
      10_000,
      async () => (await a.metric('sched_queue_admission_paused', { queue: s.queue })) === 0,
    );
    console.log(
      `overload (100/s due, worker 10/s, lease 6 s, high mark 10): at most ${maxUnstarted} dispatched-not-started, ` +
        `due backlog up to ${maxBacklog}; ${N} of ${N} ran once, 0 dispatched twice without a start; drained ${drainedMs} ms after the first due time`,
    );
  }, 180_000);
});
