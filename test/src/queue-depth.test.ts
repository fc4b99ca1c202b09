import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueDepth } from '@sched/store';
import { createJob, sleep, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

/**
 * The seed's two backlogs, per queue: due and not claimed (the scheduler is behind) and claimed and
 * not started (the relay or the workers are behind), each with the age of its oldest job, and the
 * jobs running. Each phase makes one of them non-zero on purpose and reads the scheduler's gauges.
 */
describe('backlog per queue: overdue, dispatched and not started, running', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await Scenario.create('qdepth', 2);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('shows each backlog with its oldest age, and 0 once the work is done', async () => {
    const env = {
      SCHED_SESSION_TIMEOUT_MS: '3000',
      SCHED_HEARTBEAT_INTERVAL_MS: '1000',
      SCHED_RECONCILE_EVERY_MS: '200',
      SCHED_RECONCILE_GRACE_MS: '500',
      SCHED_QUEUE_BACKLOG_EVERY_MS: '200',
    };
    const q = { queue: s.queue };
    const a = await s.startScheduler(env);

    // 1. Dispatched, no worker: the queue depth grows, and so does its oldest age.
    const nDispatched = 20;
    await s.producer.send(
      Array.from({ length: nDispatched }, (_, i) => createJob(`d-${i}`, s.queue, Date.now() + 1_000)),
    );
    await s.collector.waitFor(
      () => s.collector.seen.length >= nDispatched,
      20_000,
      'dispatch records of the first jobs',
    );
    await until('the dispatched gauge shows every job, aged ≥ 1 s', 15_000, async () => {
      const n = await a.metric('sched_queue_dispatched_jobs', q);
      const age = await a.metric('sched_queue_oldest_dispatched_seconds', q);
      return n === nDispatched && age >= 1;
    });
    expect(await a.metric('sched_queue_overdue_jobs', q)).toBe(0);
    expect(await a.metric('sched_queue_running_jobs', q)).toBe(0);

    // 2. Due and not claimed: jobs applied, their owner killed before they are due; its successor
    // drains them at a low catch-up rate, so the due backlog is seen with its age.
    const nOverdue = 40;
    const due = Date.now() + 4_000;
    await s.producer.send(
      Array.from({ length: nOverdue }, (_, i) =>
        createJob(`o-${i}`, s.queue, due, { payload: Buffer.from(JSON.stringify({ sleepMs: 3_000 })) }),
      ),
    );
    await until('the overdue jobs are applied', 20_000, async () => {
      const { rows } = await s.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM job WHERE job_id LIKE 'o-%'",
      );
      return rows[0]!.n === nOverdue;
    });
    a.signal('SIGKILL');
    await sleep(Math.max(0, due + 2_500 - Date.now()));
    // The store's count, as the API reads it, while no scheduler owns anything.
    const depth = await queueDepth(s.db.pool, { partitions: null, graceMs: 500 });
    expect(depth).toEqual([
      expect.objectContaining({ queue: s.queue, overdue: nOverdue, dispatched: nDispatched, running: 0 }),
    ]);
    expect(depth[0]!.oldestOverdueSeconds).toBeGreaterThanOrEqual(2);
    expect(depth[0]!.oldestDispatchedSeconds).toBeGreaterThan(depth[0]!.oldestOverdueSeconds);

    const b = await s.startScheduler({ ...env, SCHED_CATCH_UP_RATE_PER_SEC: '8' });
    let seenOverdue = 0;
    let seenOverdueAge = 0;
    let seenPartitionAge = 0;
    await until('the successor reports the due backlog', 20_000, async () => {
      seenOverdue = await b.metric('sched_queue_overdue_jobs', q);
      seenOverdueAge = await b.metric('sched_queue_oldest_overdue_seconds', q);
      seenPartitionAge = Math.max(
        await b.metric('sched_overdue_oldest_age_seconds', { partition: '0' }),
        await b.metric('sched_overdue_oldest_age_seconds', { partition: '1' }),
      );
      return seenOverdue > 0 && seenOverdueAge >= 2 && seenPartitionAge >= 2;
    });
    expect(seenOverdue).toBeLessThanOrEqual(nOverdue);

    // 3. A worker: the dispatched jobs start and finish, the overdue ones run for 3 s each.
    await s.startWorker();
    let seenRunning = 0;
    await until('every job finished and every gauge back to 0', 60_000, async () => {
      seenRunning = Math.max(seenRunning, await b.metric('sched_queue_running_jobs', q));
      const { rows } = await s.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM job WHERE state = 'SUCCEEDED'",
      );
      if (rows[0]!.n !== nDispatched + nOverdue) return false;
      const left = await Promise.all(
        [
          'sched_queue_overdue_jobs',
          'sched_queue_oldest_overdue_seconds',
          'sched_queue_dispatched_jobs',
          'sched_queue_oldest_dispatched_seconds',
          'sched_queue_running_jobs',
        ].map((m) => b.metric(m, q)),
      );
      return left.every((v) => v === 0);
    });
    expect(seenRunning).toBeGreaterThan(0);
    expect(await queueDepth(s.db.pool, { partitions: null, graceMs: 500 })).toEqual([]);
  });
});
