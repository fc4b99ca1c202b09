import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { MessageProducer } from '@sched/kafka';
import type { CommandInput } from '@sched/contracts';
import {
  cancelJob,
  createJob,
  kafka,
  rescheduleJob,
  scheduleCommand,
  upsertSchedule,
} from './support/kafka.js';
import { scenarioApi } from './support/api.js';
import { Scenario } from './support/scenario.js';

// Every command has a status (GET /v1/commands/:commandId): pending while on Kafka, then applied,
// no-op (with why) or rejected (with the reason), for every command kind, whether it came through
// the API or straight from the command topic; ?wait long-polls; another tenant's is a 404.

describe('command status on the real stack', () => {
  let s: Scenario;
  let app: FastifyInstance;
  let producer: MessageProducer;
  const DEV = { 'x-api-key': 'dev-key' };
  const OTHER = { 'x-api-key': 'other-key' };
  const far = Date.now() + 3_600_000;

  const status = async (commandId: string, wait = '10s', headers = DEV) => {
    const res = await app.inject({ method: 'GET', url: `/v1/commands/${commandId}?wait=${wait}`, headers });
    return {
      code: res.statusCode,
      body: res.json() as { status: string; detail: string | null; kind: string },
    };
  };
  const viaTopic = async (cmd: CommandInput) => {
    await s.producer.send([cmd]);
    return cmd.commandId;
  };

  beforeAll(async () => {
    s = await Scenario.create('cmdstatus', 2);
    await s.db.pool.query("INSERT INTO tenant (tenant_id) VALUES ('other')");
    await s.startScheduler();
    producer = await kafka().producer();
    app = await scenarioApi(s, producer, {
      'dev-key': { id: 'bob', tenantId: 'default', permissions: [] },
      'other-key': { id: 'eve', tenantId: 'other', permissions: [] },
    });
  });
  afterAll(async () => {
    await app?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it('a command sent while the scheduler is stopped is pending, then applied; the 202 links to it', async () => {
    const sched = s.schedulers[0]!;
    sched.signal('SIGSTOP');
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: DEV,
        payload: { jobId: 'st-1', queue: s.queue, dueAt: far, payload: {} },
      });
      expect(res.statusCode).toBe(202);
      const { commandId, statusUrl } = res.json() as { commandId: string; statusUrl: string };
      expect(statusUrl).toBe(`/v1/commands/${commandId}`);
      const pending = await app.inject({ method: 'GET', url: statusUrl, headers: DEV });
      expect(pending.json()).toMatchObject({ status: 'pending', kind: 'CreateJob', entityId: 'st-1' });
      sched.signal('SIGCONT');
      const t0 = Date.now();
      const done = await status(commandId);
      expect(done.body).toMatchObject({ status: 'applied', kind: 'CreateJob', entityId: 'st-1' });
      console.log(
        `command status: pending while stopped, applied ${Date.now() - t0} ms after SIGCONT (long poll)`,
      );
      // Another tenant never sees it; an id nobody sent is a 404 too.
      expect((await status(commandId, '0', OTHER)).code).toBe(404);
      expect((await status('no-such-command', '0')).code).toBe(404);
      expect((await status(commandId, 'forever')).code).toBe(400);
    } finally {
      sched.signal('SIGCONT');
    }
  });

  it('every job command kind goes to applied, no-op with why, or rejected with the reason', async () => {
    // Through the API: a create, a second create of the same id, a cancel, the same cancel again.
    const post = (payload: object) => app.inject({ method: 'POST', url: '/v1/jobs', headers: DEV, payload });
    const c1 = (await post({ jobId: 'st-2', queue: s.queue, dueAt: far, payload: {} })).json()
      .commandId as string;
    expect((await status(c1)).body.status).toBe('applied');
    const c2 = (await post({ jobId: 'st-2', queue: s.queue, dueAt: far, payload: {} })).json()
      .commandId as string;
    expect((await status(c2)).body).toMatchObject({
      status: 'no-op',
      detail: expect.stringContaining('exists already'),
    });
    const cancel = async () =>
      (await app.inject({ method: 'DELETE', url: '/v1/jobs/st-2', headers: DEV })).json().commandId as string;
    expect((await status(await cancel())).body.status).toBe('applied');
    expect((await status(await cancel())).body).toMatchObject({
      status: 'no-op',
      detail: 'job st-2 is CANCELLED already',
    });
    // Straight on the command topic: a reschedule at a stale version, of an unknown job, a
    // cancel of an unknown job, and a create for an unknown queue (rejected).
    await viaTopic(createJob('st-3', s.queue, far));
    const stale = await viaTopic({
      ...rescheduleJob('st-3', far + 1_000),
      body: { kind: 'RescheduleJob', value: { jobId: 'st-3', dueAtMs: far + 1_000, expectedVersion: 7 } },
    });
    expect((await status(stale)).body).toMatchObject({
      status: 'no-op',
      detail: 'job st-3 is at version 1, not the expected 7',
    });
    const moved = await viaTopic(rescheduleJob('st-3', far + 2_000));
    expect((await status(moved)).body.status).toBe('applied');
    expect((await status(await viaTopic(rescheduleJob('st-none', far)))).body).toMatchObject({
      status: 'no-op',
      detail: 'no job st-none',
    });
    expect((await status(await viaTopic(cancelJob('st-none')))).body).toMatchObject({
      status: 'no-op',
      detail: 'no job st-none',
    });
    const bad = await viaTopic(createJob('st-4', 'no-such-queue', far));
    expect((await status(bad)).body).toMatchObject({
      status: 'rejected',
      detail: expect.stringMatching(/^UNKNOWN_QUEUE: /),
    });
  });

  it('every schedule command kind has its status too', async () => {
    const up = await viaTopic(upsertSchedule('st-sched', s.queue, { cron: '0 9 * * *' }));
    expect((await status(up)).body).toMatchObject({ status: 'applied', kind: 'UpsertSchedule' });
    const pause1 = await viaTopic(scheduleCommand('PauseSchedule', 'st-sched'));
    expect((await status(pause1)).body.status).toBe('applied');
    const pause2 = await viaTopic(scheduleCommand('PauseSchedule', 'st-sched'));
    expect((await status(pause2)).body).toMatchObject({
      status: 'no-op',
      detail: expect.stringContaining('PauseSchedule'),
    });
    expect((await status(await viaTopic(scheduleCommand('ResumeSchedule', 'st-sched')))).body.status).toBe(
      'applied',
    );
    expect((await status(await viaTopic(scheduleCommand('DeleteSchedule', 'st-sched')))).body.status).toBe(
      'applied',
    );
    expect((await status(await viaTopic(scheduleCommand('DeleteSchedule', 'st-sched')))).body.status).toBe(
      'no-op',
    );
    const bad = await viaTopic(upsertSchedule('st-bad', s.queue, { cron: 'not a cron' }));
    expect((await status(bad)).body).toMatchObject({
      status: 'rejected',
      detail: expect.stringMatching(/^INVALID_CRON: /),
    });
  });
});
