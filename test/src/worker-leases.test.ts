import { afterEach, describe, expect, it } from 'vitest';
import { cancelJob, createJob, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

const FAST_SCHEDULER = {
  SCHED_REAP_EVERY_MS: '500',
  SCHED_REAP_SKEW_MARGIN_MS: '200',
  SCHED_RECONCILE_EVERY_MS: '500',
  SCHED_RECONCILE_GRACE_MS: '500',
};
const spec = (o: object) => Buffer.from(JSON.stringify(o));

describe('workers: version-checked start and fenced leases on the real stack', () => {
  let s: Scenario | undefined;

  /** A job's attempt history, checked to be attempt 1 lost (its worker gone) and attempt 2 run. */
  async function lostThenSucceeded(jobId: string) {
    const { rows } = await s!.db.pool.query<{ attempt: number; outcome: string; worker_id: string }>(
      'SELECT attempt, outcome, worker_id FROM attempt_history WHERE job_id = $1 ORDER BY attempt',
      [jobId],
    );
    expect(rows.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 'LEASE_LOST'],
      [2, 'SUCCEEDED'],
    ]);
    return rows;
  }
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('cancel racing dispatch: 500 jobs cancelled after their dispatch is on Kafka never run', async () => {
    s = await Scenario.create('wcx', 4);
    await s.startScheduler(FAST_SCHEDULER);
    const n = 500;
    await s.producer.send(
      Array.from({ length: n }, (_, i) => createJob(`c-${i}`, s!.queue, Date.now() + 300)),
    );
    await s.collector.waitFor(() => s!.collector.seen.length >= n, 30_000, 'all dispatch records on Kafka');
    await s.producer.send(Array.from({ length: n }, (_, i) => cancelJob(`c-${i}`)));
    await until('all cancels committed', 30_000, async () => {
      const { rows } = await s!.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM job WHERE state = 'CANCELLED'",
      );
      return rows[0]!.n === n;
    });
    // Only now does a worker see the (stale) dispatch records.
    const w = await s.startWorker();
    await until(
      'every record refused',
      30_000,
      async () => (await w.metric('sched_worker_refused_start_total')) >= n,
    );
    expect(await s.executions()).toEqual([]);
    expect(await w.metric('sched_worker_started_total')).toBe(0);
  });

  it('kill -9 a worker mid-job: the reaper returns the job, another worker runs it with a new generation', async () => {
    s = await Scenario.create('wkill', 2);
    await s.startScheduler(FAST_SCHEDULER);
    const a = await s.startWorker({ SCHED_LEASE_TTL_MS: '2000', SCHED_HEARTBEAT_EVERY_MS: '500' });
    await s.producer.send([
      createJob('kill-1', s.queue, Date.now() + 200, { payload: spec({ sleepMs: 4_000 }) }),
    ]);
    await until('attempt 1 started', 20_000, async () => (await s!.executions('kill-1')).length > 0);
    a.signal('SIGKILL');
    await s.startWorker({ SCHED_LEASE_TTL_MS: '2000', SCHED_HEARTBEAT_EVERY_MS: '500' });
    await until('job succeeded', 40_000, async () => (await s!.jobStates()).get('kill-1') === 'SUCCEEDED');
    const ex = await s.executions('kill-1');
    const finished = ex.filter((e) => e.outcome === 'finished');
    expect(finished).toHaveLength(1);
    expect(finished[0]!.attempt).toBe(2);
    expect(finished[0]!.generation).toBeGreaterThan(ex[0]!.generation);
    // The killed worker never ended attempt 1: the reaper wrote its row. Attempt 2 is the job's own.
    const rows = await lostThenSucceeded('kill-1');
    expect(rows[0]!.worker_id).toBe(a.ownerId);
  });

  it('kill -9 a worker holding a one-minute lease: its liveness row lapses and another worker runs the job within seconds', async () => {
    s = await Scenario.create('wlive', 2);
    const sched = await s.startScheduler(FAST_SCHEDULER);
    // A lease of a minute, renewed every 5 s: without the liveness row the job would wait a minute.
    const env = {
      SCHED_LEASE_TTL_MS: '60000',
      SCHED_HEARTBEAT_EVERY_MS: '5000',
      SCHED_WORKER_LIVENESS_TTL_MS: '2000',
      SCHED_WORKER_LIVENESS_EVERY_MS: '500',
    };
    const workers = [await s.startWorker(env), await s.startWorker(env)];
    await s.producer.send([
      createJob('live-1', s.queue, Date.now() + 200, { payload: spec({ sleepMs: 8_000 }) }),
    ]);
    await until('attempt 1 started', 20_000, async () => (await s!.executions('live-1')).length > 0);
    const first = (await s.executions('live-1'))[0]!;
    const a = workers.find((w) => w.ownerId === first.worker_id)!;
    const b = workers.find((w) => w !== a)!;
    a.signal('SIGKILL');
    const killedAt = Date.now();
    await until('attempt 2 started', 30_000, async () =>
      (await s!.executions('live-1')).some((e) => e.attempt === 2),
    );
    const retakenMs = Date.now() - killedAt;
    await until('job succeeded', 30_000, async () => (await s!.jobStates()).get('live-1') === 'SUCCEEDED');
    console.log(`[liveness] kill -9 → attempt 2 started after ${retakenMs} ms (lease 60 s, liveness 2 s)`);
    const ex = await s.executions('live-1');
    expect(ex.filter((e) => e.outcome === 'finished').map((e) => [e.attempt, e.worker_id])).toEqual([
      [2, b.ownerId],
    ]);
    const { rows } = await s.db.pool.query<{ attempt: number; outcome: string; error: string | null }>(
      "SELECT attempt, outcome, error FROM attempt_history WHERE job_id = 'live-1' ORDER BY attempt",
    );
    expect(rows.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 'LEASE_LOST'],
      [2, 'SUCCEEDED'],
    ]);
    expect(rows[0]!.error).toContain('worker gone');
    expect(await sched.metric('sched_worker_gone_jobs_reaped_total')).toBe(1);
  });

  it('a worker whose liveness beats all fail for the TTL stops its running executions (no overlap with a retake)', async () => {
    s = await Scenario.create('wlapse', 2);
    await s.startScheduler(FAST_SCHEDULER);
    await s.startWorker({
      SCHED_LEASE_TTL_MS: '60000',
      SCHED_HEARTBEAT_EVERY_MS: '5000',
      SCHED_WORKER_LIVENESS_TTL_MS: '1500',
      SCHED_WORKER_LIVENESS_EVERY_MS: '500',
    });
    await s.producer.send([
      createJob('lapse-1', s.queue, Date.now() + 200, { payload: spec({ untilAbortedMs: 30_000 }) }),
    ]);
    await until('attempt 1 started', 20_000, async () => (await s!.executions('lapse-1')).length > 0);
    // The worker's beats now fail (the table is gone for it); its lease of a minute still holds.
    await s.db.pool.query('ALTER TABLE worker_liveness RENAME TO worker_liveness_away');
    try {
      await until('the execution aborted', 15_000, async () =>
        (await s!.executions('lapse-1')).some((e) => e.outcome.startsWith('aborted')),
      );
    } finally {
      await s.db.pool.query('ALTER TABLE worker_liveness_away RENAME TO worker_liveness');
    }
    const ex = await s.executions('lapse-1');
    expect(ex.map((e) => e.outcome)).toEqual(['started', 'aborted:LEASE_LOST']);
  });

  it("a frozen worker's late completion is refused: 0 double completions", async () => {
    s = await Scenario.create('wstop', 2);
    const sched = await s.startScheduler(FAST_SCHEDULER);
    const a = await s.startWorker({ SCHED_LEASE_TTL_MS: '2000', SCHED_HEARTBEAT_EVERY_MS: '500' });
    await s.producer.send([
      createJob('late-1', s.queue, Date.now() + 200, { payload: spec({ sleepMs: 3_000 }) }),
    ]);
    await until('attempt 1 started', 20_000, async () => (await s!.executions('late-1')).length > 0);
    a.signal('SIGSTOP');
    const b = await s.startWorker({ SCHED_LEASE_TTL_MS: '2000', SCHED_HEARTBEAT_EVERY_MS: '500' });
    await until(
      'attempt 2 succeeded',
      40_000,
      async () => (await s!.jobStates()).get('late-1') === 'SUCCEEDED',
    );
    a.signal('SIGCONT');
    await until(
      'frozen worker finished and was refused',
      20_000,
      async () => (await a.metric('sched_worker_refused_completions_total')) >= 1,
    );
    const rows = await lostThenSucceeded('late-1');
    expect(rows[1]!.worker_id).toBe(b.ownerId);
    expect(await sched.metric('sched_lease_reaped_total', { to: 'SCHEDULED' })).toBeGreaterThanOrEqual(1);
  });

  it('a long job keeps its lease by heartbeat and resumes from its checkpoint after a crash', async () => {
    s = await Scenario.create('wlong', 2);
    const sched = await s.startScheduler(FAST_SCHEDULER);
    const lease = { SCHED_LEASE_TTL_MS: '1500', SCHED_HEARTBEAT_EVERY_MS: '400' };
    await s.startWorker(lease);
    // 16 × 250 ms = 4 s of work against a 1.5 s lease: only heartbeats keep it.
    await s.producer.send([
      createJob('long-1', s.queue, Date.now() + 200, { payload: spec({ steps: 16, stepMs: 250 }) }),
    ]);
    await until('long job done', 30_000, async () => (await s!.jobStates()).get('long-1') === 'SUCCEEDED');
    expect((await s.executions('long-1')).filter((e) => e.outcome === 'started')).toHaveLength(1);
    expect(await sched.metric('sched_lease_reaped_total')).toBe(0);

    // Crash mid-way: the retry starts from the last checkpoint, not from zero.
    const a = s.workers[0]!;
    await s.producer.send([
      createJob('long-2', s.queue, Date.now() + 200, { payload: spec({ steps: 20, stepMs: 250 }) }),
    ]);
    await until('some progress checkpointed', 20_000, async () => {
      const { rows } = await s!.db.pool.query<{ step: number | null }>(
        "SELECT (checkpoint->>'step')::int AS step FROM job WHERE job_id = 'long-2'",
      );
      return (rows[0]?.step ?? 0) >= 4;
    });
    a.signal('SIGKILL');
    await s.startWorker(lease);
    await until('long-2 done', 40_000, async () => (await s!.jobStates()).get('long-2') === 'SUCCEEDED');
    const starts = (await s.executions('long-2')).filter((e) => e.outcome === 'started');
    expect(starts).toHaveLength(2);
    expect(starts[0]!.from_step).toBe(0);
    expect(starts[1]!.from_step).toBeGreaterThanOrEqual(4);
  });
});
