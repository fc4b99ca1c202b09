import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPLAY_PERMISSION, registryPayloadValidator, replayDeadLetters } from '@sched/dead-letters';
import { cancelJob, Collector, contracts, createJob, sleep, until } from './support/kafka.js';
import { endpoints } from './support/isolation.js';
import { Scenario } from './support/scenario.js';

const spec = (o: object) => Buffer.from(JSON.stringify(o));
const fastRetries = { baseMs: 200, capMs: 400, overrides: [] };

describe('workers: each failure class takes its path on the real stack', () => {
  let s: Scenario;
  const attempts = async (jobId: string) =>
    (
      await s.db.pool.query<{
        attempt: number;
        outcome: string;
        failure_class: string | null;
        started_ms: number;
        ended_ms: number;
        retry_ms: number | null;
      }>(
        `SELECT attempt, outcome, failure_class, (extract(epoch FROM started_at) * 1000)::float8 AS started_ms,
                (extract(epoch FROM ended_at) * 1000)::float8 AS ended_ms, (extract(epoch FROM retry_at) * 1000)::float8 AS retry_ms
         FROM attempt_history WHERE job_id = $1 ORDER BY attempt`,
        [jobId],
      )
    ).rows;

  beforeAll(async () => {
    s = await Scenario.create('wretry', 2);
    await s.startScheduler({ SCHED_RECONCILE_EVERY_MS: '500', SCHED_RECONCILE_GRACE_MS: '500' });
    await s.startWorker();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('transient: retried with backoff until it succeeds', async () => {
    await s.producer.send([
      createJob('tr-1', s.queue, Date.now() + 100, {
        payload: spec({ fail: 'transient', failAttempts: 2 }),
        retryPolicy: fastRetries,
        maxAttempts: 5,
      }),
    ]);
    await until('tr-1 succeeded', 30_000, async () => (await s.jobStates()).get('tr-1') === 'SUCCEEDED');
    const a = await attempts('tr-1');
    expect(a.map((x) => [x.outcome, x.failure_class])).toEqual([
      ['FAILED', 'TRANSIENT'],
      ['FAILED', 'TRANSIENT'],
      ['SUCCEEDED', null],
    ]);
    // Each retry started no earlier than its scheduled retry time, and within the cap + dispatch slack.
    for (let i = 1; i < a.length; i++) {
      expect(a[i]!.started_ms).toBeGreaterThanOrEqual(a[i - 1]!.retry_ms!);
      expect(a[i - 1]!.retry_ms! - a[i - 1]!.ended_ms).toBeLessThanOrEqual(400 + 5);
    }
  });

  it('throttled: Retry-After is honoured, never retried earlier', async () => {
    await s.producer.send([
      createJob('th-1', s.queue, Date.now() + 100, {
        payload: spec({ fail: 'throttled', failAttempts: 1, retryAfterMs: 2_500 }),
        retryPolicy: fastRetries,
        maxAttempts: 5,
      }),
    ]);
    await until('th-1 succeeded', 30_000, async () => (await s.jobStates()).get('th-1') === 'SUCCEEDED');
    const a = await attempts('th-1');
    expect(a.map((x) => x.failure_class)).toEqual(['THROTTLED', null]);
    expect(a[1]!.started_ms - a[0]!.ended_ms).toBeGreaterThanOrEqual(2_500);
  });

  it('permanent: no retry, straight to the DLQ with its history; replay runs it again under the same id', async () => {
    await s.producer.send([
      createJob('pe-1', s.queue, Date.now() + 100, {
        payload: spec({ fail: 'permanent', failAttempts: 1 }),
        retryPolicy: fastRetries,
        maxAttempts: 5,
      }),
    ]);
    await until('pe-1 dead', 30_000, async () => (await s.jobStates()).get('pe-1') === 'DEAD');
    expect((await attempts('pe-1')).map((x) => x.failure_class)).toEqual(['PERMANENT']);
    const dl = await s.db.pool.query<{ failure_class: string }>(
      "SELECT failure_class FROM dead_letter WHERE job_id = 'pe-1'",
    );
    expect(dl.rows[0]!.failure_class).toBe('PERMANENT');
    // Governed replay: goes back through the scheduler's ordinary claim path to a worker.
    const r = await replayDeadLetters(
      s.db.pool,
      registryPayloadValidator(s.db.pool, endpoints().registryUrl),
      {
        caller: { id: 'ops', tenantId: 'default', permissions: [REPLAY_PERMISSION] },
        jobIds: ['pe-1'],
        reason: 'account fixed',
        ratePerSec: 5,
      },
    );
    expect(r.replayed).toEqual(['pe-1']);
    await until(
      'pe-1 succeeded after replay',
      30_000,
      async () => (await s.jobStates()).get('pe-1') === 'SUCCEEDED',
    );
    const a = await attempts('pe-1');
    expect(a).toHaveLength(2);
    expect(a[1]!.outcome).toBe('SUCCEEDED');
  });

  it('unknown: retried (relying on the idempotency key) and dead-lettered when the budget is spent', async () => {
    await s.producer.send([
      createJob('un-1', s.queue, Date.now() + 100, {
        payload: spec({ fail: 'unknown' }),
        retryPolicy: fastRetries,
        maxAttempts: 3,
      }),
    ]);
    await until('un-1 dead', 30_000, async () => (await s.jobStates()).get('un-1') === 'DEAD');
    expect((await attempts('un-1')).map((x) => x.failure_class)).toEqual(['UNKNOWN', 'UNKNOWN', 'UNKNOWN']);
    expect(await s.workers[0]!.metric('sched_dlq_ingress_total')).toBeGreaterThanOrEqual(2);
  });

  it('writes lifecycle events to sched.events through the outbox (cancel, retry, dead letter)', async () => {
    const tag = Date.now().toString(36);
    const events = await new Collector(['sched.events'], false).start();
    await s.producer.send([
      createJob(`ev-${tag}-dead`, s.queue, Date.now() + 100, { payload: spec({ fail: 'permanent' }) }),
      createJob(`ev-${tag}-retry`, s.queue, Date.now() + 100, {
        payload: spec({ fail: 'transient', failAttempts: 1 }),
        retryPolicy: fastRetries,
        maxAttempts: 3,
      }),
      createJob(`ev-${tag}-cx`, s.queue, Date.now() + 60_000),
    ]);
    await sleep(500);
    await s.producer.send([cancelJob(`ev-${tag}-cx`)]);
    const c = await contracts();
    const mine = async () => {
      const out: { jobId: string; type: string; version: number }[] = [];
      for (const m of events.raw) {
        const e = await c.decodeEvent(m.value!);
        if (e.jobId.startsWith(`ev-${tag}`)) out.push({ jobId: e.jobId, type: e.type, version: e.version });
      }
      return out;
    };
    await until('three events', 30_000, async () => (await mine()).length >= 3);
    const got = await mine();
    expect(got).toEqual(
      expect.arrayContaining([
        { jobId: `ev-${tag}-dead`, type: 'DEAD_LETTERED', version: 1 },
        { jobId: `ev-${tag}-retry`, type: 'RETRY_SCHEDULED', version: 1 },
        { jobId: `ev-${tag}-cx`, type: 'CANCELLED', version: 2 },
      ]),
    );
    await events.stop();
  });
});
