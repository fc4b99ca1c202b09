import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collector, contracts, createJob, rescheduleJob, sleep, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// The execution timeout is a ceiling: a handler that ignores its abort signal (and even keeps
// calling heartbeat) loses the job at the timeout plus a grace, its attempt TIMED_OUT.
// CreateJob.expiresAtMs: a job not dispatched by then is marked EXPIRED instead, with its EXPIRED
// event, whatever path would have fired it (the wheel, the catch-up after an outage, the
// dispatch of a create already due). And a reschedule of a running job is refused with a reason
// instead of answering nothing.

describe('execution timeout, expiry and a reschedule of a running job, on the real stack', () => {
  let s: Scenario;
  let rejected: Collector;
  let events: Collector;
  beforeAll(async () => {
    s = await Scenario.create('expiry', 2);
    rejected = await new Collector([s.rejectedTopic], false).start();
    events = await new Collector(['sched.events'], false).start();
  });
  afterAll(async () => {
    await rejected?.stop();
    await events?.stop();
    await s?.close();
  });

  const states = async (prefix: string) =>
    new Map(
      (
        await s.db.pool.query<{ job_id: string; state: string }>(
          'SELECT job_id, state FROM job WHERE job_id LIKE $1',
          [`${prefix}%`],
        )
      ).rows.map((r) => [r.job_id, r.state]),
    );

  it('a job whose expiry passed while the scheduler was stopped expires; one with time left runs', async () => {
    const a = await s.startScheduler();
    await s.startWorker();
    const tag = `x${Date.now()}`;
    const now = Date.now();
    await s.producer.send([
      createJob(`${tag}-expires`, s.queue, now + 3_000, { expiresAtMs: now + 5_000 }),
      createJob(`${tag}-in-time`, s.queue, now + 3_000, { expiresAtMs: now + 120_000 }),
      // Created already past its expiry (due 2 s ago, expired 1 s ago): never dispatched either.
      createJob(`${tag}-born-expired`, s.queue, now - 2_000, { expiresAtMs: now - 1_000 }),
    ]);
    await until('created', 20_000, async () => (await states(tag)).size === 3);
    a.signal('SIGSTOP'); // an outage across both due times and the first expiry
    await sleep(Math.max(0, now + 6_500 - Date.now()));
    a.signal('SIGCONT');
    await until('expired and run', 30_000, async () => {
      const st = await states(tag);
      return (
        st.get(`${tag}-expires`) === 'EXPIRED' &&
        st.get(`${tag}-born-expired`) === 'EXPIRED' &&
        st.get(`${tag}-in-time`) === 'SUCCEEDED'
      );
    });
    const dispatched = s.collector.seen.map((d) => d.record.jobId).filter((id) => id.startsWith(tag));
    expect(dispatched).toEqual([`${tag}-in-time`]);
    const c = await contracts();
    await until('EXPIRED events', 30_000, async () => {
      const mine: string[] = [];
      for (const m of events.raw) {
        const e = await c.decodeEvent(m.value!);
        if (e.jobId.startsWith(tag) && e.type === 'EXPIRED') mine.push(e.jobId);
      }
      return mine.length === 2;
    });
    expect(await a.metric('sched_jobs_expired_total')).toBe(2);
  });

  it('refuses a reschedule of a running job with JOB_RUNNING; the run goes on', async () => {
    const tag = `r${Date.now()}`;
    await s.producer.send([
      createJob(`${tag}-slow`, s.queue, Date.now() + 500, {
        payload: Buffer.from(JSON.stringify({ sleepMs: 4_000 })),
      }),
    ]);
    await until('running', 20_000, async () => (await states(tag)).get(`${tag}-slow`) === 'RUNNING');
    const had = rejected.raw.length;
    await s.producer.send([rescheduleJob(`${tag}-slow`, Date.now() + 60_000)]);
    await until('a rejection', 20_000, async () => rejected.raw.length > had);
    const c = await contracts();
    const r = await c.decodeRejected(rejected.raw[had]!.value);
    expect(r.reasonCode).toBe('JOB_RUNNING');
    await until('succeeded', 20_000, async () => (await states(tag)).get(`${tag}-slow`) === 'SUCCEEDED');
    const { rows } = await s.db.pool.query<{ version: number }>('SELECT version FROM job WHERE job_id = $1', [
      `${tag}-slow`,
    ]);
    expect(rows[0]!.version).toBe(1);
  });
  it('takes back a job running past its execution timeout whose handler ignores the abort: TIMED_OUT, dead-lettered', async () => {
    const tag = `t${Date.now()}`;
    const t0 = Date.now();
    await s.producer.send([
      createJob(`${tag}-stubborn`, s.queue, Date.now() + 300, {
        payload: Buffer.from(JSON.stringify({ ignoreAbortMs: 15_000 })),
        executionTimeoutMs: 1_500,
        maxAttempts: 1,
      }),
    ]);
    await until('running', 20_000, async () => (await states(tag)).get(`${tag}-stubborn`) === 'RUNNING');
    const started = Date.now();
    await until('taken back while the handler still runs', 14_000, async () => {
      return (await states(tag)).get(`${tag}-stubborn`) === 'DEAD';
    });
    const tookMs = Date.now() - started;
    // The handler has not returned (it runs 15 s): only its start is recorded.
    expect((await s.executions(`${tag}-stubborn`)).map((e) => e.outcome)).toEqual(['started']);
    const attempts = await s.db.pool.query('SELECT outcome FROM attempt WHERE job_id = $1', [
      `${tag}-stubborn`,
    ]);
    expect(attempts.rows).toEqual([{ outcome: 'TIMED_OUT' }]);
    const dl = await s.db.pool.query('SELECT failure_class FROM dead_letter WHERE job_id = $1', [
      `${tag}-stubborn`,
    ]);
    expect(dl.rows).toEqual([{ failure_class: 'TIMEOUT' }]);
    expect(await s.schedulers[0]!.metric('sched_execution_timeouts_reaped_total')).toBe(1);
    console.log(
      `execution timeout 1.5 s, handler ignoring it: taken back ${tookMs} ms after its start (${Date.now() - t0} ms after create)`,
    );
  });
});

describe('a handler that ignores its execution timeout does not keep its slot', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await Scenario.create('abandon', 1);
    await s.startScheduler();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('a worker of concurrency 1 runs the next job while the stubborn handler is still running', async () => {
    const worker = await s.startWorker({
      SCHED_WORKER_CONCURRENCY: '1',
      SCHED_WORKER_ABANDON_AFTER_TIMEOUT_MS: '1000',
    });
    const tag = `a${Date.now()}`;
    const due = Date.now() + 500;
    await s.producer.send([
      createJob(`${tag}-stubborn`, s.queue, due, {
        payload: Buffer.from(JSON.stringify({ ignoreAbortMs: 20_000 })),
        executionTimeoutMs: 1_500,
        maxAttempts: 1,
      }),
      createJob(`${tag}-next`, s.queue, due + 200),
    ]);
    const t0 = Date.now();
    await until('the next job ran', 15_000, async () => {
      const { rows } = await s.db.pool.query('SELECT state FROM job WHERE job_id = $1', [`${tag}-next`]);
      return rows[0]?.state === 'SUCCEEDED';
    });
    const tookMs = Date.now() - t0;
    // The stubborn handler runs 20 s: the next job did not wait for it.
    expect(tookMs).toBeLessThan(15_000);
    expect(await worker.metric('sched_worker_handlers_abandoned_total')).toBe(1);
    expect(await worker.metric('sched_worker_handlers_abandoned_running')).toBe(1);
    console.log(
      `concurrency 1, handler ignoring a 1.5 s timeout (runs 20 s): the next job succeeded ${tookMs} ms after create`,
    );
  });
});
