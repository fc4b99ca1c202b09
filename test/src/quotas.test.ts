import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { CommandRejected } from '@sched/contracts';
import type { MessageProducer } from '@sched/kafka';
import { cancelJob, Collector, contracts, createJob, kafka, sleep, until } from './support/kafka.js';
import { scenarioApi } from './support/api.js';
import { Scenario } from './support/scenario.js';

// Quotas the platform enforces, on the real stack: a tenant's pending-jobs cap on both paths (the
// command topic: QUOTA_EXCEEDED; the API: 429), its command rate at the API fleet-wide (two API
// instances share one bucket), and a queue's dispatch rate across two schedulers. Tenants and
// queues are set up through the admin routes, not SQL.

describe('quotas', () => {
  let s: Scenario;
  let api1: FastifyInstance;
  let api2: FastifyInstance;
  let producer: MessageProducer;
  let rejected: Collector;
  const ADMIN = { 'x-api-key': 'key-admin' };
  const Q = { 'x-api-key': 'key-q' };
  const R = { 'x-api-key': 'key-r' };
  const far = Date.now() + 3_600_000;

  const rejections = async (from: number): Promise<CommandRejected[]> => {
    const c = await contracts();
    return Promise.all(rejected.raw.slice(from).map((m) => c.decodeRejected(m.value!)));
  };
  const jobsOf = async (tenant: string): Promise<Map<string, string>> => {
    const { rows } = await s.db.pool.query<{ job_id: string; state: string }>(
      'SELECT job_id, state FROM job WHERE tenant_id = $1',
      [tenant],
    );
    return new Map(rows.map((r) => [r.job_id, r.state]));
  };
  const commandEnd = async (): Promise<bigint> => {
    const admin = await kafka().admin();
    try {
      const ends = await admin.endOffsets(s.commandsTopic);
      return [...ends.values()].reduce((a, b) => a + BigInt(b), 0n);
    } finally {
      await admin.disconnect();
    }
  };

  beforeAll(async () => {
    s = await Scenario.create('quotas', 2);
    const env = { SCHED_ADMISSION_EVERY_MS: '250' };
    await s.startScheduler(env);
    await s.startScheduler(env);
    producer = await kafka().producer();
    const callers = {
      'key-admin': { id: 'root', tenantId: 'default', permissions: ['admin'] },
      'key-q': { id: 'quinn', tenantId: 'tenant-q', permissions: [] },
      'key-r': { id: 'rita', tenantId: 'tenant-r', permissions: [] },
    };
    api1 = await scenarioApi(s, producer, callers);
    api2 = await scenarioApi(s, producer, callers);
    rejected = await new Collector([s.rejectedTopic], false).start();
  });
  afterAll(async () => {
    await rejected?.stop();
    await api1?.close();
    await api2?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it('tenants and queues are administered through the API, by an admin only', async () => {
    const put = (headers: Record<string, string>, payload: object, url = '/v1/tenants/tenant-q') =>
      api1.inject({ method: 'PUT', url, headers, payload });
    expect((await put(Q, { maxPendingJobs: 20 })).statusCode).toBe(403);
    const bad = await put(ADMIN, { commandsPerSecond: -1 });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('SCHED_E_VALIDATION');
    expect((await put(ADMIN, { commandBurst: 5 })).statusCode).toBe(400); // a burst needs a rate
    expect((await put(ADMIN, {}, '/v1/tenants/not%20an%20id')).statusCode).toBe(400);
    const created = await put(ADMIN, { maxPendingJobs: 20 });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      tenantId: 'tenant-q',
      maxPendingJobs: 20,
      commandsPerSecond: null,
    });
    expect((await put(ADMIN, { maxPendingJobs: 20 })).statusCode).toBe(200);
    expect(
      (await put(ADMIN, { commandsPerSecond: 5, commandBurst: 10 }, '/v1/tenants/tenant-r')).statusCode,
    ).toBe(201);
    // A tenant reads its own, not another's (404 is not leaked: the admin route is 403 for it).
    const own = await api1.inject({ method: 'GET', url: '/v1/tenants/tenant-q', headers: Q });
    expect(own.json()).toMatchObject({ tenantId: 'tenant-q', maxPendingJobs: 20, pendingJobs: 0 });
    expect((await api1.inject({ method: 'GET', url: '/v1/tenants/tenant-r', headers: Q })).statusCode).toBe(
      403,
    );
    const list = await api1.inject({ method: 'GET', url: '/v1/tenants', headers: ADMIN });
    expect(list.json().tenants.map((t: { tenantId: string }) => t.tenantId)).toEqual(
      expect.arrayContaining(['default', 'tenant-q', 'tenant-r']),
    );
    const queue = await api1.inject({
      method: 'PUT',
      url: `/v1/queues/${s.queue}`,
      headers: Q,
      payload: { maxDispatchPerSecond: 20 },
    });
    expect(queue.statusCode).toBe(403);
  });

  it('a pending cap refuses the creates beyond it on the command topic (QUOTA_EXCEEDED), and frees up as jobs finish', async () => {
    await sleep(1_500); // every scheduler reads the caps every 250 ms
    const had = rejected.raw.length;
    const first = Array.from({ length: 50 }, (_, i) => ({
      ...createJob(`q-${i}`, s.queue, far),
      tenantId: 'tenant-q',
    }));
    await s.producer.send(first);
    await until('50 creates applied or rejected', 30_000, async () => {
      return (await jobsOf('tenant-q')).size + rejected.raw.length - had >= 50;
    });
    await sleep(500);
    const jobs = await jobsOf('tenant-q');
    const refused = await rejections(had);
    const { rows: parts } = await s.db.pool.query(
      "SELECT partition, count(*)::int AS n FROM job WHERE tenant_id = 'tenant-q' GROUP BY 1",
    );
    console.log(
      'created per partition',
      JSON.stringify(parts),
      'refused per partition',
      JSON.stringify(
        refused.reduce<Record<number, number>>(
          (m, r) => ({ ...m, [r.sourcePartition]: (m[r.sourcePartition] ?? 0) + 1 }),
          {},
        ),
      ),
      refused[0]?.message,
    );
    expect(jobs.size).toBe(20);
    expect(refused).toHaveLength(30);
    expect(new Set(refused.map((r) => r.reasonCode))).toEqual(new Set(['QUOTA_EXCEEDED']));
    expect(refused[0]!.message).toContain('20 pending jobs');
    // Ten of them finish (cancelled): ten more fit, once the schedulers have counted again.
    await s.producer.send(
      [...jobs.keys()].slice(0, 10).map((id) => ({ ...cancelJob(id), tenantId: 'tenant-q' })),
    );
    await until('10 cancelled', 20_000, async () => {
      return [...(await jobsOf('tenant-q')).values()].filter((st) => st === 'CANCELLED').length === 10;
    });
    await sleep(1_500);
    const had2 = rejected.raw.length;
    const more = Array.from({ length: 15 }, (_, i) => ({
      ...createJob(`q2-${i}`, s.queue, far),
      tenantId: 'tenant-q',
    }));
    await s.producer.send(more);
    await until('15 more applied or rejected', 30_000, async () => {
      const now = await jobsOf('tenant-q');
      return now.size - 20 + rejected.raw.length - had2 >= 15;
    });
    await sleep(500);
    const after = await jobsOf('tenant-q');
    const pending = [...after.values()].filter((st) => st === 'SCHEDULED').length;
    expect(pending).toBe(20);
    expect(rejected.raw.length - had2).toBe(5);
    console.log(
      `pending cap 20: 50 sent -> 20 created, 30 QUOTA_EXCEEDED; 10 finished, 15 sent -> 10 created, 5 refused`,
    );
  });

  it('the API answers 429 at the pending cap, with Retry-After, and sends nothing', async () => {
    const before = await commandEnd();
    const res = await api2.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: Q,
      payload: { queue: s.queue, dueAt: far, payload: { n: 1 } },
    });
    expect(res.statusCode).toBe(429);
    expect(res.json().error).toMatchObject({ code: 'SCHED_E_QUOTA_EXCEEDED', retriable: true });
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await commandEnd()).toBe(before);
    // A cancel is not a create: it passes.
    const id = [...(await jobsOf('tenant-q'))].find(([, st]) => st === 'SCHEDULED')![0];
    expect((await api2.inject({ method: 'DELETE', url: `/v1/jobs/${id}`, headers: Q })).statusCode).toBe(202);
  });

  it('the command rate is one bucket for every API instance: 429 with Retry-After beyond it', async () => {
    const t0 = Date.now();
    const statuses: number[] = [];
    const retryAfter: number[] = [];
    for (let i = 0; i < 30; i++) {
      const api = i % 2 === 0 ? api1 : api2;
      const res = await api.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: R,
        payload: { queue: s.queue, dueAt: far, payload: { i } },
      });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) {
        expect(res.json().error.code).toBe('SCHED_E_RATE_LIMITED');
        retryAfter.push(Number(res.headers['retry-after']));
      }
    }
    const elapsedS = (Date.now() - t0) / 1000;
    const ok = statuses.filter((x) => x === 202).length;
    expect(ok).toBeGreaterThanOrEqual(10);
    expect(ok).toBeLessThanOrEqual(10 + Math.ceil(5 * elapsedS));
    expect(statuses.filter((x) => x === 429).length).toBe(30 - ok);
    expect(retryAfter.every((r) => r >= 1)).toBe(true);
    // A batch over the burst can never pass: a 400, not a 429.
    const big = await api1.inject({
      method: 'POST',
      url: '/v1/jobs/batch',
      headers: R,
      payload: { jobs: Array.from({ length: 11 }, () => ({ queue: s.queue, dueAt: far, payload: {} })) },
    });
    expect(big.statusCode).toBe(400);
    await sleep(1_100);
    const later = await api2.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: R,
      payload: { queue: s.queue, dueAt: far, payload: {} },
    });
    expect(later.statusCode).toBe(202);
    console.log(
      `command rate 5/s burst 10: ${ok} of 30 accepted in ${elapsedS.toFixed(2)} s across two API instances`,
    );
  });

  it('a queue dispatch rate holds across two schedulers, and every job is dispatched', async () => {
    const set = await api1.inject({
      method: 'PUT',
      url: `/v1/queues/${s.queue}`,
      headers: ADMIN,
      payload: { maxDispatchPerSecond: 20 },
    });
    expect(set.statusCode).toBe(200);
    expect(
      (await api1.inject({ method: 'GET', url: `/v1/queues/${s.queue}`, headers: R })).json(),
    ).toMatchObject({
      maxDispatchPerSecond: 20,
    });
    await sleep(1_000);
    const due = Date.now() + 1_500;
    const n = 120;
    await s.producer.send(Array.from({ length: n }, (_, i) => createJob(`rate-${i}`, s.queue, due)));
    await until(`${n} dispatched`, 60_000, async () => {
      const { rows } = await s.db.pool.query(
        "SELECT count(*)::int AS n FROM job WHERE job_id LIKE 'rate-%' AND dispatched_at IS NOT NULL",
      );
      return rows[0].n === n;
    });
    const { rows } = await s.db.pool.query<{ ms: number }>(
      `SELECT (extract(epoch FROM dispatched_at) * 1000)::float8 AS ms FROM job
       WHERE job_id LIKE 'rate-%' ORDER BY dispatched_at`,
    );
    const times = rows.map((r) => r.ms);
    const spanS = (times[times.length - 1]! - times[0]!) / 1000;
    // Two schedulers, 10/s each; each bucket holds one reconcile period (2 s) of its share: at most
    // 40 at once, the rest at 20/s.
    const most = 40;
    expect(spanS).toBeGreaterThanOrEqual((n - most) / 20 - 0.5);
    const perWindow = times.map((t) => times.filter((u) => u >= t && u < t + 1_000).length);
    const maxPerSecond = Math.max(...perWindow);
    expect(maxPerSecond).toBeLessThanOrEqual(most + 20);
    // dispatched_at is the claim; the dispatch record reaches the topic through the outbox a moment
    // later, so wait for it rather than read the collector at once.
    await until(
      `${n} dispatch records`,
      30_000,
      async () => s.collector.seen.filter((d) => d.record.jobId.startsWith('rate-')).length >= n,
    );
    console.log(
      `dispatch rate 20/s, 2 schedulers: ${n} jobs dispatched over ${spanS.toFixed(1)} s ` +
        `(${(n / Math.max(spanS, 0.001)).toFixed(1)}/s), busiest second ${maxPerSecond}`,
    );
  });
});
