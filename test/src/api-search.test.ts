import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { MessageProducer } from '@sched/kafka';
import { scenarioApi } from './support/api.js';
import { kafka, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// Job search and schedule reads on the real stack: filters, cursor pages that neither skip nor
// repeat, another tenant's rows never listed nor shown, and bad parameters refused with a coded
// error.

describe('job search and schedule reads', () => {
  let s: Scenario;
  let app: FastifyInstance;
  let producer: MessageProducer;
  const A = { 'x-api-key': 'a-key' };
  const B = { 'x-api-key': 'b-key' };
  const base = Date.parse('2030-01-01T00:00:00Z');

  const get = async (url: string, headers = A) => {
    const res = await app.inject({ method: 'GET', url, headers });
    return { status: res.statusCode, body: res.json() as Record<string, unknown> };
  };

  beforeAll(async () => {
    s = await Scenario.create('search', 2);
    await s.db.pool.query("INSERT INTO tenant (tenant_id) VALUES ('tenant-b')");
    await s.startScheduler();
    producer = await kafka().producer();
    app = await scenarioApi(s, producer, {
      'a-key': { id: 'alice', tenantId: 'default', permissions: [] },
      'b-key': { id: 'bob', tenantId: 'tenant-b', permissions: [] },
    });
    const jobs = Array.from({ length: 25 }, (_, i) => ({
      jobId: `find-${String(i).padStart(2, '0')}`,
      queue: s.queue,
      dueAt: base + Math.floor(i / 2) * 60_000, // pairs share a due time: the id breaks the tie
      businessKey: i % 5 === 0 ? 'customer-7' : `invoice-${i}`,
      payload: {},
    }));
    expect(
      (await app.inject({ method: 'POST', url: '/v1/jobs/batch', headers: A, payload: { jobs } })).statusCode,
    ).toBe(202);
    const other = { jobId: 'b-secret', queue: s.queue, dueAt: base, businessKey: 'customer-7', payload: {} };
    expect(
      (await app.inject({ method: 'POST', url: '/v1/jobs', headers: B, payload: other })).statusCode,
    ).toBe(202);
    for (const [id, headers] of [
      ['search-daily', A],
      ['search-b', B],
    ] as const) {
      const r = await app.inject({
        method: 'PUT',
        url: `/v1/schedules/${id}`,
        headers,
        payload: { queue: s.queue, cron: '0 9 * * *', timeZone: 'Europe/Paris', dstSkippedPolicy: 'SKIP' },
      });
      expect(r.statusCode).toBe(202);
    }
    await until('all applied', 30_000, async () => {
      const { rows } = await s.db.pool.query<{ n: number }>(
        "SELECT (SELECT count(*) FROM job WHERE job_id LIKE 'find-%' OR job_id = 'b-secret')::int + (SELECT count(*) FROM schedule)::int AS n",
      );
      return rows[0]!.n === 28;
    });
  });
  afterAll(async () => {
    await app?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it("pages through the tenant's jobs by due time and id, neither skipping nor repeating", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await get(`/v1/jobs?queue=${s.queue}&limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      seen.push(...(r.body.jobs as { jobId: string }[]).map((j) => j.jobId));
      cursor = r.body.nextCursor as string | null;
      pages++;
    } while (cursor);
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => `find-${String(i).padStart(2, '0')}`));
    expect(pages).toBe(4);
  });

  it("filters by state, due range and business key; another tenant's jobs never appear", async () => {
    const byKey = await get('/v1/jobs?businessKey=customer-7');
    expect((byKey.body.jobs as { jobId: string }[]).map((j) => j.jobId)).toEqual([
      'find-00',
      'find-05',
      'find-10',
      'find-15',
      'find-20',
    ]);
    const range = await get(
      `/v1/jobs?dueFrom=${base + 60_000}&dueTo=${new Date(base + 180_000).toISOString()}`,
    );
    expect((range.body.jobs as { jobId: string }[]).map((j) => j.jobId)).toEqual([
      'find-02',
      'find-03',
      'find-04',
      'find-05',
    ]);
    expect(((await get('/v1/jobs?state=CANCELLED')).body.jobs as unknown[]).length).toBe(0);
    expect(((await get('/v1/jobs?state=SCHEDULED&limit=1000')).body.jobs as unknown[]).length).toBe(25);
    const asB = await get('/v1/jobs?businessKey=customer-7', B);
    expect((asB.body.jobs as { jobId: string }[]).map((j) => j.jobId)).toEqual(['b-secret']);
  });

  it("lists and shows the tenant's schedules; another tenant's is a 404", async () => {
    const list = await get('/v1/schedules');
    expect(list.body).toMatchObject({
      schedules: [{ scheduleId: 'search-daily', dstSkippedPolicy: 'SKIP' }],
      nextCursor: null,
    });
    const one = await get('/v1/schedules/search-daily');
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ cron: '0 9 * * *', timeZone: 'Europe/Paris', state: 'ACTIVE' });
    expect((await get('/v1/schedules/search-b')).status).toBe(404);
    expect((await get('/v1/schedules?state=PAUSED')).body.schedules).toEqual([]);
  });

  it('refuses bad parameters with a coded error', async () => {
    for (const url of [
      '/v1/jobs?state=SLEEPING',
      '/v1/jobs?limit=0',
      '/v1/jobs?limit=5000',
      '/v1/jobs?cursor=not-a-cursor',
      '/v1/jobs?dueFrom=tomorrow',
      '/v1/schedules?state=ASLEEP',
      `/v1/schedules?cursor=${Buffer.from('[1,2]').toString('base64url')}`,
    ]) {
      const r = await get(url);
      expect(r.status, url).toBe(400);
      expect((r.body.error as { code: string }).code, url).toBe('SCHED_E_VALIDATION');
    }
  });

  it("cancels by filter: a dry run counts, the real one cancels exactly those, another tenant's untouched", async () => {
    const post = (payload: object, headers = A) =>
      app.inject({ method: 'POST', url: '/v1/jobs/cancel', headers, payload });
    const dry = await post({ businessKey: 'customer-7', dryRun: true });
    expect(dry.statusCode).toBe(200);
    expect(dry.json()).toEqual({
      matched: 5,
      sent: 0,
      more: false,
      jobIds: ['find-00', 'find-05', 'find-10', 'find-15', 'find-20'],
    });
    expect((await post({ dryRun: true })).statusCode).toBe(400); // no filter: refused
    expect((await post({ state: 'SUCCEEDED' })).statusCode).toBe(400); // not cancellable
    expect((await post({ businessKey: 'customer-7', dueFrom: 'soon' })).statusCode).toBe(400);
    const real = await post({ businessKey: 'customer-7', reason: 'customer left' });
    expect(real.json()).toMatchObject({ matched: 5, sent: 5, more: false });
    await until('cancelled', 20_000, async () => {
      const states = await s.jobStates();
      return ['find-00', 'find-05', 'find-10', 'find-15', 'find-20'].every(
        (id) => states.get(id) === 'CANCELLED',
      );
    });
    const states = await s.jobStates();
    expect(
      [...states.entries()]
        .filter(([, st]) => st === 'CANCELLED')
        .map(([id]) => id)
        .sort(),
    ).toEqual(['find-00', 'find-05', 'find-10', 'find-15', 'find-20']);
    expect(states.get('b-secret')).toBe('SCHEDULED');
    // Nothing left to cancel: matched 0, nothing sent.
    expect((await post({ businessKey: 'customer-7' })).json()).toMatchObject({ matched: 0, sent: 0 });
  });
});
