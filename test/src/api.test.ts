import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '@sched/api-app';
import { REPLAY_PERMISSION, registryPayloadValidator } from '@sched/dead-letters';
import { workerBeat } from '@sched/store';
import type { MessageProducer } from '@sched/kafka';
import { contracts, kafka, sleep } from './support/kafka.js';
import { endpoints } from './support/isolation.js';
import { Scenario } from './support/scenario.js';

describe('HTTP API on the real stack', () => {
  let s: Scenario;
  let app: FastifyInstance;
  let producer: MessageProducer;
  const ops = { 'x-api-key': 'ops-key' };
  const dev = { 'x-api-key': 'dev-key' };

  beforeAll(async () => {
    s = await Scenario.create('api', 2);
    await s.startScheduler();
    producer = await kafka().producer();
    app = buildApp({
      checkResponses: true,
      producer,
      contracts: await contracts(),
      pool: s.db.pool,
      commandsTopic: s.commandsTopic,
      callers: new Map([
        ['ops-key', { id: 'alice@ops', tenantId: 'default', permissions: [REPLAY_PERMISSION, 'ops:read'] }],
        ['dev-key', { id: 'bob@dev', tenantId: 'default', permissions: [] }],
      ]),
      payloadValidator: registryPayloadValidator(s.db.pool, endpoints().registryUrl),
    });
  });
  afterAll(async () => {
    await app?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it('creates a job that the scheduler dispatches, and shows it', async () => {
    const dueAt = new Date(Date.now() + 1_000).toISOString();
    const res = await app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: dev,
      payload: { jobId: 'api-1', queue: s.queue, dueAt, payload: { hello: 'world' } },
    });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ jobId: 'api-1' });
    await s.collector.waitFor(
      () => s.collector.seen.some((d) => d.record.jobId === 'api-1'),
      20_000,
      'api-1 dispatched',
    );
    const d = s.collector.seen.find((x) => x.record.jobId === 'api-1')!.record;
    expect(JSON.parse(d.payload.toString())).toEqual({ hello: 'world' });
    expect(d.dueAtMs).toBe(Date.parse(dueAt));
    const got = await app.inject({ method: 'GET', url: '/v1/jobs/api-1', headers: dev });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toMatchObject({ jobId: 'api-1', state: 'DISPATCHED', version: 1, attempt: 1 });
    // No worker runs in this scenario: the job waits in the queue, and the queue says so.
    const queues = await app.inject({ method: 'GET', url: '/v1/queues', headers: dev });
    expect(queues.statusCode).toBe(200);
    const row = (queues.json() as { queues: { queue: string; dispatched: number }[] }).queues.find(
      (r) => r.queue === s.queue,
    );
    expect(row).toMatchObject({ queue: s.queue, overdue: 0, running: 0 });
    expect(row!.dispatched).toBeGreaterThanOrEqual(1);
  });

  it('shows partition ownership to operators only', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/partitions', headers: ops });
    expect(res.statusCode).toBe(200);
    const body = res.json() as {
      homeRegion: unknown;
      partitions: { partition: number; ownerId: string; epoch: number; ownedForMs: number }[];
    };
    expect(body.homeRegion).toBeNull();
    expect(body.partitions.map((p) => p.partition)).toEqual([0, 1]);
    expect(new Set(body.partitions.map((p) => p.ownerId)).size).toBe(1);
    for (const p of body.partitions) {
      expect(p.epoch).toBeGreaterThanOrEqual(1);
      expect(p.ownedForMs).toBeGreaterThanOrEqual(0);
    }
    const denied = await app.inject({ method: 'GET', url: '/v1/partitions', headers: dev });
    expect(denied.statusCode).toBe(403);
    expect((denied.json() as { error: { code: string } }).error.code).toBe('SCHED_E_FORBIDDEN');
  });

  it('shows worker liveness to operators only', async () => {
    await workerBeat(s.db.pool, 'api-worker', randomUUID(), 60_000);
    const res = await app.inject({ method: 'GET', url: '/v1/workers', headers: ops });
    expect(res.statusCode).toBe(200);
    const row = (
      res.json() as { workers: { workerId: string; alive: boolean; running: number }[] }
    ).workers.find((w) => w.workerId === 'api-worker');
    expect(row).toMatchObject({ workerId: 'api-worker', alive: true, running: 0 });
    const denied = await app.inject({ method: 'GET', url: '/v1/workers', headers: dev });
    expect(denied.statusCode).toBe(403);
  });

  it('cancels and reschedules through commands', async () => {
    const later = Date.now() + 30_000;
    await app.inject({
      method: 'POST',
      url: '/v1/jobs/batch',
      headers: dev,
      payload: {
        jobs: [
          { jobId: 'api-c', queue: s.queue, dueAt: later },
          { jobId: 'api-r', queue: s.queue, dueAt: later },
        ],
      },
    });
    await sleep(1_000);
    expect((await app.inject({ method: 'DELETE', url: '/v1/jobs/api-c', headers: dev })).statusCode).toBe(
      202,
    );
    const newDue = Date.now() + 1_500;
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/jobs/api-r/reschedule',
          headers: dev,
          payload: { dueAt: newDue },
        })
      ).statusCode,
    ).toBe(202);
    await s.collector.waitFor(
      () => s.collector.seen.some((d) => d.record.jobId === 'api-r'),
      20_000,
      'api-r at its new time',
    );
    expect((await app.inject({ method: 'GET', url: '/v1/jobs/api-c', headers: dev })).json()).toMatchObject({
      state: 'CANCELLED',
      version: 2,
    });
  });

  it('answers bad input with a code and the right status', async () => {
    const bad = async (
      method: 'POST' | 'PUT' | 'GET',
      url: string,
      payload?: object,
      headers: Record<string, string> = dev,
    ) => {
      const r = await app.inject({ method, url, payload, headers });
      return [r.statusCode, (r.json() as { error?: { code: string } }).error?.code];
    };
    expect(await bad('POST', '/v1/jobs', { queue: s.queue, dueAt: 'tomorrow morning' })).toEqual([
      400,
      'SCHED_E_VALIDATION',
    ]);
    expect(await bad('POST', '/v1/jobs', { queue: 'no-such-queue', dueAt: Date.now() })).toEqual([
      400,
      'SCHED_E_UNKNOWN_QUEUE',
    ]);
    expect(await bad('POST', '/v1/jobs', { dueAt: Date.now() }, {})).toEqual([
      401,
      'SCHED_E_UNAUTHENTICATED',
    ]);
    expect(await bad('PUT', '/v1/schedules/s1', { cron: '99 * * * *', timeZone: 'UTC' })).toEqual([
      400,
      'SCHED_E_INVALID_CRON',
    ]);
    expect(await bad('PUT', '/v1/schedules/s1', { cron: '0 9 * * *', timeZone: 'Atlantis/Capital' })).toEqual(
      [400, 'SCHED_E_UNKNOWN_ZONE'],
    );
    expect(await bad('GET', '/v1/jobs/nope')).toEqual([404, 'SCHED_E_NOT_FOUND']);
    expect(await bad('GET', '/v1/queues?overdueAfterMs=-1')).toEqual([400, 'SCHED_E_VALIDATION']);
    expect(await bad('GET', '/v1/queues?overdueAfterMs=soon')).toEqual([400, 'SCHED_E_VALIDATION']);
    expect(await bad('POST', '/v1/dlq/replay', { jobIds: ['x'], reason: 'because' })).toEqual([
      403,
      'SCHED_E_REPLAY_FORBIDDEN',
    ]);
    expect(await bad('POST', '/v1/dlq/replay', { jobIds: ['x'], reason: '' }, ops)).toEqual([
      400,
      'SCHED_E_REPLAY_REASON_REQUIRED',
    ]);
  });

  it('previews a rule across a DST change in UTC and local time', async () => {
    const r = await app.inject({
      method: 'GET',
      url: `/v1/schedules/preview?cron=${encodeURIComponent('30 2 * * *')}&timeZone=America/New_York&from=2026-03-06T12:00:00Z&n=3`,
      headers: dev,
    });
    expect(r.statusCode).toBe(200);
    const next = (r.json() as { next: { utc: string; local: string; dst: string }[] }).next;
    expect(next.map((x) => x.dst)).toEqual(['NONE', 'SHIFTED', 'NONE']);
    expect(next[1]!.local).toMatch(/^2026-03-08T03:00:00/); // 02:30 does not exist that night: shifted to 03:00
    // `from` as integer ms since the epoch, as its error message offers.
    const ms = await app.inject({
      method: 'GET',
      url: `/v1/schedules/preview?cron=${encodeURIComponent('30 2 * * *')}&timeZone=America/New_York&from=${Date.parse('2026-03-06T12:00:00Z')}&n=3`,
      headers: dev,
    });
    expect(ms.statusCode).toBe(200);
    expect(ms.json()).toEqual(r.json());
  });

  it('creates a schedule whose occurrences show up in the ledger', async () => {
    const r = await app.inject({
      method: 'PUT',
      url: '/v1/schedules/api-every-sec',
      headers: dev,
      payload: { queue: s.queue, intervalMs: 1_000, timeZone: 'UTC', maxRuns: 2 },
    });
    expect(r.statusCode).toBe(202);
    expect((r.json() as { next: unknown[] }).next).toHaveLength(5);
    await s.collector.waitFor(
      () => s.collector.seen.filter((d) => d.record.scheduleId === 'api-every-sec').length >= 2,
      20_000,
      '2 occurrences',
    );
    const ledger = await app.inject({
      method: 'GET',
      url: '/v1/schedules/api-every-sec/occurrences',
      headers: dev,
    });
    expect(ledger.json()).toMatchObject({ fates: { FIRED: 2 } });
  });
});
