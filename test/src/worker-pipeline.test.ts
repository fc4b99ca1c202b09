import { afterEach, describe, expect, it } from 'vitest';
import { createJob, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

const spec = (o: object) => Buffer.from(JSON.stringify(o));

describe('workers: batches end at durable starts, executions are bounded per process and per queue', () => {
  let s: Scenario | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('a long job does not hold up the jobs behind it on its partition', async () => {
    s = await Scenario.create('whol', 1);
    await s.startScheduler();
    await s.startWorker();
    const t = Date.now();
    await s.producer.send([createJob('long', s.queue, t + 300, { payload: spec({ sleepMs: 8_000 }) })]);
    await until('the long job started', 20_000, async () => (await s!.executions('long')).length > 0);
    // Later records of the same dispatch partitions (4 of them: ~10 of these share the long job's).
    const shorts = Array.from({ length: 40 }, (_, i) => `short-${i}`);
    await s.producer.send(shorts.map((id) => createJob(id, s!.queue, Date.now() + 100)));
    await until('every short job finished', 30_000, async () => {
      const ex = await s!.executions();
      return shorts.every((id) => ex.some((e) => e.job_id === id && e.outcome === 'finished'));
    });
    // Ordering, not timing: every short job ended while the long one was still running.
    const long = await s.executions('long');
    expect(long.some((e) => e.outcome === 'finished')).toBe(false);
    await until('the long job finished', 30_000, async () =>
      (await s!.executions('long')).some((e) => e.outcome === 'finished'),
    );
  });

  it("a queue's own concurrency bounds its executions in flight", async () => {
    s = await Scenario.create('wqc', 2);
    await s.startScheduler();
    await s.startWorker({ TEST_QUEUE_CONCURRENCY: '2' });
    const ids = Array.from({ length: 12 }, (_, i) => `qc-${i}`);
    await s.producer.send(
      ids.map((id) => createJob(id, s!.queue, Date.now() + 300, { payload: spec({ sleepMs: 300 }) })),
    );
    await until('all finished', 60_000, async () => {
      const ex = await s!.executions();
      return ids.every((id) => ex.some((e) => e.job_id === id && e.outcome === 'finished'));
    });
    // Most executions overlapping at any moment, from each one's start and finish.
    const ex = await s.executions();
    const spans = ids.map((id) => ({
      from: ex.find((e) => e.job_id === id && e.outcome === 'started')!.started_ms,
      to: ex.find((e) => e.job_id === id && e.outcome === 'finished')!.finished_ms,
    }));
    const most = Math.max(...spans.map((a) => spans.filter((b) => b.from <= a.from && a.from < b.to).length));
    expect(most).toBeLessThanOrEqual(2);
    expect(most).toBeGreaterThanOrEqual(1);
  });

  it("a queue's start rate spreads a burst of due jobs out", async () => {
    s = await Scenario.create('wrate', 2);
    await s.startScheduler();
    const rate = 10;
    const worker = await s.startWorker({ TEST_QUEUE_RATE: String(rate) });
    const ids = Array.from({ length: 30 }, (_, i) => `rt-${i}`);
    await s.producer.send(ids.map((id) => createJob(id, s!.queue, Date.now() + 1_000)));
    await until('all finished', 60_000, async () => {
      const ex = await s!.executions();
      return ids.every((id) => ex.some((e) => e.job_id === id && e.outcome === 'finished'));
    });
    const starts = (await s.executions())
      .filter((e) => e.outcome === 'started')
      .map((e) => e.started_ms)
      .sort((a, b) => a - b);
    expect(starts).toHaveLength(ids.length);
    // 30 jobs due together at 10 a second: ~2.9 s from first to last start, about 10 in any one
    // second (measured at handler start, after the batched start write: a few of slack for its
    // jitter; without the gate all 30 start within the same second).
    let most = 0;
    for (let i = 0, j = 0; i < starts.length; i++) {
      while (starts[i]! - starts[j]! >= 1_000) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBeLessThanOrEqual(rate + 3);
    expect(starts[starts.length - 1]! - starts[0]!).toBeGreaterThanOrEqual(2_500);
    expect(await worker.metric('sched_worker_rate_limited_total')).toBeGreaterThan(0);
  });

  it("a handler's slot is free once it returns, while its completion still waits for the database", async () => {
    s = await Scenario.create('wslot', 1);
    await s.startScheduler();
    await s.startWorker({ SCHED_WORKER_CONCURRENCY: '1' });
    await s.producer.send([createJob('a', s.queue, Date.now() + 200, { payload: spec({ sleepMs: 1_500 }) })]);
    await until('a started', 20_000, async () => (await s!.executions('a')).length > 0);
    // Hold a's job row: its completion (an UPDATE of that row) cannot be written until we let go.
    const holder = await s.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM job WHERE job_id = 'a' FOR UPDATE");
      await s.producer.send([createJob('b', s.queue, Date.now() + 100)]);
      // With one slot, b can run only if a's slot came back when a's handler returned.
      await until('b ran while a was still being completed', 30_000, async () =>
        (await s!.executions('b')).some((e) => e.outcome === 'finished'),
      );
      expect((await s.executions('a')).some((e) => e.outcome === 'finished')).toBe(true);
      expect((await s.jobStates()).get('a')).toBe('RUNNING');
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    await until('both succeeded', 30_000, async () => {
      const st = await s!.jobStates();
      return st.get('a') === 'SUCCEEDED' && st.get('b') === 'SUCCEEDED';
    });
  });
});
