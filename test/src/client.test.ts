import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandRefusedError, SchedulerClient, type RejectionReasonCode } from '@sched/client';
import { endpoints } from './support/isolation.js';
import { recordsOn, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// The producer client on the real stack: a service with only Kafka and the registry creates,
// cancels and reschedules jobs and runs a schedule through its commands, waits on their events, and
// has every bad input refused with the scheduler's own reason code before anything is sent.

describe('@sched/client on the real stack', () => {
  let s: Scenario;
  let client: SchedulerClient;

  const commandCount = () => recordsOn(s.commandsTopic);
  const stateOf = async (table: 'job' | 'schedule', id: string) => {
    const col = table === 'job' ? 'job_id' : 'schedule_id';
    const { rows } = await s.db.pool.query<{ state: string; due_ms: number | null }>(
      `SELECT state, ${table === 'job' ? '(extract(epoch FROM due_at) * 1000)::float8' : 'NULL'} AS due_ms
       FROM ${table} WHERE ${col} = $1`,
      [id],
    );
    return rows[0];
  };

  beforeAll(async () => {
    s = await Scenario.create('client', 2);
    await s.startScheduler();
    // SUCCEEDED events are written only when a worker is asked to (they cost an outbox row per job).
    await s.startWorker({ SCHED_WORKER_LIFECYCLE_EVENTS: 'all' });
    const ep = endpoints();
    client = await SchedulerClient.connect({
      brokers: ep.kafkaBrokers,
      registryUrl: ep.registryUrl,
      tenantId: 'default',
      callerId: 'billing-service',
      commandsTopic: s.commandsTopic,
      queues: [s.queue],
      watchEvents: true,
    });
  });
  afterAll(async () => {
    await client?.close();
    await s?.close();
  });

  it('creates a job that a worker runs, and waits for its SUCCEEDED event', async () => {
    const t0 = Date.now();
    const { jobId, commandId } = await client.createJob({
      queue: s.queue,
      dueAt: new Date(Date.now() + 1_000),
      payload: { sleepMs: 10 },
    });
    expect(commandId).toMatch(/^[0-9a-f-]{36}$/);
    const done = await client.waitFor(jobId, ['SUCCEEDED', 'DEAD_LETTERED'], { timeoutMs: 60_000 });
    expect(done.type).toBe('SUCCEEDED');
    const runs = await s.executions(jobId);
    expect(runs.filter((r) => r.outcome === 'started')).toHaveLength(1);
    expect(runs[0]!.started_ms).toBeGreaterThanOrEqual(t0 + 1_000);
    console.log(`client: created, ran and SUCCEEDED in ${Date.now() - t0} ms (due after 1000 ms)`);
  });

  it('creates a batch in one send; each job runs once', async () => {
    const due = Date.now() + 1_000;
    const receipts = await client.createJobs(
      Array.from({ length: 50 }, (_, i) => ({ jobId: `cb-${i}`, queue: s.queue, dueAt: due, payload: {} })),
    );
    expect(receipts.map((r) => r.jobId)).toEqual(Array.from({ length: 50 }, (_, i) => `cb-${i}`));
    expect(new Set(receipts.map((r) => r.commandId)).size).toBe(50);
    await until('50 succeeded', 60_000, async () => {
      const { rows } = await s.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM job WHERE job_id LIKE 'cb-%' AND state = 'SUCCEEDED'",
      );
      return rows[0]!.n === 50;
    });
    const runs = (await s.executions()).filter((r) => r.job_id.startsWith('cb-') && r.outcome === 'started');
    expect(runs).toHaveLength(50);
  });

  it('cancels and reschedules; the events name the caller', async () => {
    const far = Date.now() + 3_600_000;
    const { jobId: a } = await client.createJob({ queue: s.queue, dueAt: far });
    await until('a created', 20_000, async () => (await stateOf('job', a)) !== undefined);
    await client.cancelJob(a, { reason: 'customer left' });
    const cancelled = await client.waitFor(a, 'CANCELLED');
    expect(cancelled.callerId).toBe('billing-service');
    expect((await stateOf('job', a))?.state).toBe('CANCELLED');

    const { jobId: b } = await client.createJob({ queue: s.queue, dueAt: far });
    await until('b created', 20_000, async () => (await stateOf('job', b)) !== undefined);
    const later = far + 60_000;
    await client.rescheduleJob(b, later);
    const moved = await client.waitFor(b, 'RESCHEDULED');
    expect(moved.callerId).toBe('billing-service');
    expect((await stateOf('job', b))?.due_ms).toBe(later);
  });

  it('runs a schedule, pauses, resumes and deletes it', async () => {
    await client.upsertSchedule({
      scheduleId: 'client-every-second',
      queue: s.queue,
      intervalMs: 1_000,
      payload: {},
    });
    await until('a job of the schedule ran', 30_000, async () => {
      const { rows } = await s.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM job WHERE schedule_id = 'client-every-second' AND state = 'SUCCEEDED'",
      );
      return rows[0]!.n >= 1;
    });
    for (const [step, state] of [
      [() => client.pauseSchedule('client-every-second'), 'PAUSED'],
      [() => client.resumeSchedule('client-every-second'), 'ACTIVE'],
      [() => client.deleteSchedule('client-every-second'), 'DELETED'],
    ] as const) {
      await step();
      await until(
        `schedule ${state}`,
        15_000,
        async () => (await stateOf('schedule', 'client-every-second'))?.state === state,
      );
    }
  });

  it('refuses every bad input with the reason the scheduler would give, sending nothing', async () => {
    const before = await commandCount();
    const soon = Date.now() + 60_000;
    const refused = async (
      what: string,
      reason: RejectionReasonCode,
      call: () => Promise<unknown>,
      index = 0,
    ) => {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, what).toBeInstanceOf(CommandRefusedError);
      expect((err as CommandRefusedError).reason, `${what}: ${(err as Error).message}`).toBe(reason);
      expect((err as CommandRefusedError).code).toBe('SCHED_E_COMMAND_REFUSED');
      expect((err as CommandRefusedError).index, what).toBe(index);
    };
    const job = { queue: s.queue, dueAt: soon };
    await refused('due time in seconds', 'DUE_AT_OUT_OF_RANGE', () =>
      client.createJob({ ...job, dueAt: Math.floor(Date.now() / 1000) }),
    );
    await refused('due time not an instant', 'DUE_AT_OUT_OF_RANGE', () =>
      client.createJob({ ...job, dueAt: 'next tuesday' }),
    );
    await refused('due time 20 years ahead', 'DUE_AT_OUT_OF_RANGE', () =>
      client.createJob({ ...job, dueAt: Date.now() + 20 * 365 * 24 * 3600_000 }),
    );
    await refused('unknown field', 'INVALID_FIELD', () =>
      client.createJob({ ...job, paylod: {} } as unknown as Parameters<SchedulerClient['createJob']>[0]),
    );
    await refused('oversized payload', 'PAYLOAD_TOO_LARGE', () =>
      client.createJob({ ...job, payload: Buffer.alloc(300 * 1024) }),
    );
    await refused('unknown queue', 'UNKNOWN_QUEUE', () =>
      client.createJob({ ...job, queue: 'no-such-queue' }),
    );
    await refused('priority out of range', 'INVALID_FIELD', () =>
      client.createJob({ ...job, priority: 5_000 }),
    );
    await refused('empty job id', 'INVALID_FIELD', () => client.createJob({ ...job, jobId: '' }));
    await refused('job id with a space', 'INVALID_FIELD', () => client.createJob({ ...job, jobId: 'a b' }));
    await refused('job id not a string', 'INVALID_FIELD', () =>
      client.createJob({ ...job, jobId: 42 as unknown as string }),
    );
    await refused('maxAttempts 0', 'INVALID_FIELD', () => client.createJob({ ...job, maxAttempts: 0 }));
    await refused('expiry before due', 'INVALID_FIELD', () =>
      client.createJob({ ...job, expiresAt: soon - 1 }),
    );
    await refused('bad retry policy', 'INVALID_FIELD', () =>
      client.createJob({ ...job, retryPolicy: { baseMs: -5, capMs: 10 } }),
    );
    await refused(
      'a batch with one bad job',
      'DUE_AT_OUT_OF_RANGE',
      () => client.createJobs([job, job, { ...job, dueAt: 12 }]),
      3,
    );
    await refused('an empty batch', 'INVALID_FIELD', () => client.createJobs([]));
    await refused('cancel of an empty id', 'INVALID_FIELD', () => client.cancelJob(''));
    await refused('reschedule to 1970', 'DUE_AT_OUT_OF_RANGE', () => client.rescheduleJob('x', 0));
    await refused('reschedule expecting version 0', 'INVALID_FIELD', () =>
      client.rescheduleJob('x', soon, { expectedVersion: 0 }),
    );
    const schedule = { scheduleId: 'bad-schedule', queue: s.queue };
    await refused('cron that does not parse', 'INVALID_CRON', () =>
      client.upsertSchedule({ ...schedule, cron: 'every day at nine' }),
    );
    await refused('unknown zone', 'UNKNOWN_TIME_ZONE', () =>
      client.upsertSchedule({ ...schedule, cron: '0 9 * * *', timeZone: 'Mars/Olympus_Mons' }),
    );
    await refused('end before start', 'INVALID_SCHEDULE_WINDOW', () =>
      client.upsertSchedule({ ...schedule, cron: '0 9 * * *', startAt: soon, endAt: soon - 1_000 }),
    );
    await refused('interval of 0', 'INVALID_INTERVAL', () =>
      client.upsertSchedule({ ...schedule, intervalMs: 0 }),
    );
    await refused('unknown schedule field', 'INVALID_FIELD', () =>
      client.upsertSchedule({ ...schedule, cron: '0 9 * * *', tz: 'UTC' } as never),
    );
    await refused('pause of an empty id', 'INVALID_FIELD', () => client.pauseSchedule(''));
    await refused('resume of an id with a space', 'INVALID_FIELD', () => client.resumeSchedule('a b'));
    await refused('delete of an empty id', 'INVALID_FIELD', () => client.deleteSchedule(''));
    // Nothing of any of them reached the command topic.
    expect(await commandCount()).toBe(before);
  });
});
