import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '@sched/api-app';
import type { CommandInput, CommandRejected } from '@sched/contracts';
import { REPLAY_PERMISSION, registryPayloadValidator } from '@sched/dead-letters';
import type { MessageProducer } from '@sched/kafka';
import { createRegistry } from '@sched/metrics';
import {
  Collector,
  cancelJob,
  contracts,
  createJob,
  kafka,
  rescheduleJob,
  scheduleCommand,
  until,
  upsertSchedule,
} from './support/kafka.js';
import { endpoints } from './support/isolation.js';
import { Scenario } from './support/scenario.js';

// Invariant 9 (tenancy), probed: as tenant B, act on tenant A's jobs, schedules and dead letters
// through every API route, every command kind on the command topic and the CLI. Every probe is
// refused: 404 on the API, the same answer as for an id that does not exist; TENANT_MISMATCH on
// the command path; and A's entities are untouched.

const as = (tenantId: string, cmd: CommandInput): CommandInput => ({ ...cmd, tenantId });

describe('tenant isolation probe: tenant B acting on tenant A', () => {
  let s: Scenario;
  let app: FastifyInstance;
  let producer: MessageProducer;
  let rejected: Collector;
  const metrics = createRegistry({ component: 'api-probe' });
  const A = { 'x-api-key': 'key-of-a' };
  const B = { 'x-api-key': 'key-of-b' };
  const far = Date.now() + 3_600_000;

  /** A's job, schedule and dead letter, as Postgres holds them (compared before and after). */
  const snapshot = async () => {
    const job = await s.db.pool.query(
      "SELECT job_id, tenant_id, state, version, due_at FROM job WHERE job_id IN ('a-job', 'a-dead') ORDER BY job_id",
    );
    const schedule = await s.db.pool.query(
      "SELECT schedule_id, tenant_id, state, version, queue FROM schedule WHERE schedule_id = 'a-sched'",
    );
    const dl = await s.db.pool.query(
      "SELECT job_id, tenant_id, replay_count, replayed_at FROM dead_letter WHERE job_id = 'a-dead'",
    );
    return { jobs: job.rows, schedules: schedule.rows, deadLetters: dl.rows };
  };

  beforeAll(async () => {
    s = await Scenario.create('tenancy', 2);
    await s.db.pool.query("INSERT INTO tenant (tenant_id) VALUES ('tenant-a'), ('tenant-b')");
    await s.startScheduler();
    producer = await kafka().producer();
    const perms = [REPLAY_PERMISSION, 'dlq:replay-quarantined', 'ops:read'];
    app = buildApp({
      checkResponses: true,
      producer,
      contracts: await contracts(),
      pool: s.db.pool,
      commandsTopic: s.commandsTopic,
      callers: new Map([
        ['key-of-a', { id: 'alice', tenantId: 'tenant-a', permissions: perms }],
        ['key-of-b', { id: 'mallory', tenantId: 'tenant-b', permissions: perms }],
        ['key-of-ghost', { id: 'casper', tenantId: 'no-such-tenant', permissions: [] }],
      ]),
      payloadValidator: registryPayloadValidator(s.db.pool, endpoints().registryUrl),
      metrics,
    });
    rejected = await new Collector([s.rejectedTopic], false).start();
    // A's job and schedule, through the API.
    const job = await app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: A,
      payload: { jobId: 'a-job', queue: s.queue, dueAt: far },
    });
    expect(job.statusCode).toBe(202);
    const sched = await app.inject({
      method: 'PUT',
      url: '/v1/schedules/a-sched',
      headers: A,
      payload: { queue: s.queue, cron: '0 9 * * *', timeZone: 'Europe/Paris' },
    });
    expect(sched.statusCode).toBe(202);
    // A dead letter of A's, as a worker leaves one.
    await s.db.pool.query(
      `INSERT INTO job (job_id, partition, tenant_id, queue, state, due_at, payload, attempt)
       VALUES ('a-dead', 0, 'tenant-a', $1, 'DEAD', now(), '\\x7b7d', 3)`,
      [s.queue],
    );
    await s.db.pool.query(
      `INSERT INTO dead_letter (job_id, queue, tenant_id, failure_class, last_error, attempts)
       VALUES ('a-dead', $1, 'tenant-a', 'PERMANENT', 'boom', 3)`,
      [s.queue],
    );
    await until('A job and schedule applied', 20_000, async () => {
      const snap = await snapshot();
      return snap.jobs.length === 2 && snap.schedules.length === 1;
    });
  });
  afterAll(async () => {
    await rejected?.stop();
    await app?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it('every API route answers B as for an unknown id, and changes nothing', async () => {
    const before = await snapshot();
    const probes: { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; payload?: object }[] = [
      { method: 'GET', url: '/v1/jobs/%s' },
      { method: 'DELETE', url: '/v1/jobs/%s' },
      { method: 'POST', url: '/v1/jobs/%s/reschedule', payload: { dueAt: Date.now() + 5_000 } },
      {
        method: 'PUT',
        url: '/v1/schedules/%S',
        payload: { queue: s.queue, cron: '* * * * *', timeZone: 'UTC' },
      },
      { method: 'POST', url: '/v1/schedules/%S/pause' },
      { method: 'POST', url: '/v1/schedules/%S/resume' },
      { method: 'DELETE', url: '/v1/schedules/%S' },
      { method: 'GET', url: '/v1/schedules/%S/occurrences' },
      { method: 'GET', url: '/v1/dlq/%d' },
    ];
    const ask = async (p: (typeof probes)[number], job: string, sched: string, dead: string) => {
      const url = p.url.replace('%s', job).replace('%S', sched).replace('%d', dead);
      const res = await app.inject({ method: p.method, url, headers: B, payload: p.payload });
      const body = res.json() as { error?: { code: string } };
      return { status: res.statusCode, code: body.error?.code };
    };
    const refusedBefore = await refusals();
    const seen: string[] = [];
    for (const p of probes) {
      const foreign = await ask(p, 'a-job', 'a-sched', 'a-dead');
      // (A fresh unknown schedule id per probe: the PUT's control creates the one it names.)
      const unknown = await ask(p, 'no-such-job', `no-such-sched-${randomUUID()}`, 'no-such-dead');
      seen.push(`${p.method} ${p.url}: ${foreign.status} ${foreign.code}`);
      // The PUT of a free id creates a schedule: the unknown-id control of that route is a 202.
      if (p.method === 'PUT') expect(foreign).toEqual({ status: 404, code: 'SCHED_E_NOT_FOUND' });
      else expect(foreign).toEqual(unknown);
      expect(foreign.status).toBe(404);
    }
    // The list and the replay of dead letters: A's is neither listed nor replayed for B.
    const list = await app.inject({ method: 'GET', url: '/v1/dlq', headers: B });
    expect((list.json() as { deadLetters: unknown[] }).deadLetters).toEqual([]);
    const replay = await app.inject({
      method: 'POST',
      url: '/v1/dlq/replay',
      headers: B,
      payload: { jobIds: ['a-dead'], reason: 'probe', includeQuarantined: true },
    });
    expect(replay.json()).toMatchObject({
      replayed: [],
      refused: [{ jobId: 'a-dead', code: 'NOT_DEAD_LETTERED' }],
    });
    // Each refusal of a foreign id counted: the 7 routes that look the id up (the job and dead
    // letter reads filter by tenant in their query, so they answer 404 with nothing to count).
    expect((await refusals()) - refusedBefore).toBe(7);
    // A still sees its own.
    expect((await app.inject({ method: 'GET', url: '/v1/jobs/a-job', headers: A })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v1/dlq/a-dead', headers: A })).statusCode).toBe(200);
    expect(await snapshot()).toEqual(before);
    console.log(`tenant probe, API: ${seen.length + 2} routes, every one refused (${seen.join('; ')})`);
  });

  it("every command kind B sends about A's job or schedule is rejected TENANT_MISMATCH, A untouched", async () => {
    const before = await snapshot();
    const c = await contracts();
    const had = rejected.raw.length;
    const probes: CommandInput[] = [
      as('tenant-b', cancelJob('a-job')),
      as('tenant-b', rescheduleJob('a-job', Date.now() + 5_000)),
      as('tenant-b', createJob('a-job', s.queue, Date.now() + 5_000)),
      as('tenant-b', upsertSchedule('a-sched', s.queue, { cron: '* * * * *' })),
      as('tenant-b', scheduleCommand('PauseSchedule', 'a-sched')),
      as('tenant-b', scheduleCommand('ResumeSchedule', 'a-sched')),
      as('tenant-b', scheduleCommand('DeleteSchedule', 'a-sched')),
    ];
    // And within one batch: A creates a job, B cancels it right after.
    const fresh = `a-fresh-${randomUUID()}`;
    const sameBatch = [
      as('tenant-a', createJob(fresh, s.queue, far)),
      as('tenant-b', cancelJob(fresh)),
      as('tenant-b', createJob(fresh, s.queue, far)),
    ];
    await s.producer.send([...probes, ...sameBatch]);
    const expected = probes.length + 2;
    await until(`${expected} rejections`, 30_000, async () => rejected.raw.length >= had + expected);
    const decoded: CommandRejected[] = await Promise.all(
      rejected.raw.slice(had).map((m) => c.decodeRejected(m.value)),
    );
    expect(decoded.map((d) => d.reasonCode)).toEqual(Array(expected).fill('TENANT_MISMATCH'));
    expect(await snapshot()).toEqual(before);
    const { rows } = await s.db.pool.query<{ tenant_id: string; state: string }>(
      'SELECT tenant_id, state FROM job WHERE job_id = $1',
      [fresh],
    );
    expect(rows).toEqual([{ tenant_id: 'tenant-a', state: 'SCHEDULED' }]);
    console.log(`tenant probe, commands: ${expected} of ${expected} rejected TENANT_MISMATCH, A unchanged`);
  });

  it('the CLI replays only the tenant it is told, and says it is an operator tool', () => {
    const run = (...args: string[]) =>
      spawnSync('npx', ['tsx', 'apps/cli/src/main.ts', ...args], {
        cwd: new URL('../..', import.meta.url).pathname,
        env: {
          ...process.env,
          DATABASE_URL: endpoints().databaseUrl,
          SCHED_DB_SCHEMA: s.db.schema,
          SCHED_CLI_PERMISSIONS: REPLAY_PERMISSION,
        },
        encoding: 'utf8',
      });
    const res = run(
      'dlq-replay',
      '--caller',
      'mallory',
      '--tenant',
      'tenant-b',
      '--reason',
      'probe',
      'a-dead',
    );
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ replayed: [], refused: [{ jobId: 'a-dead' }] });
  });

  it('names the caller of every command in the lifecycle events it causes', async () => {
    const events = await new Collector(['sched.events'], false).start();
    try {
      const id = `a-who-${randomUUID()}`;
      const created = await app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: A,
        payload: { jobId: id, queue: s.queue, dueAt: far },
      });
      expect(created.statusCode).toBe(202);
      await until(
        'created',
        20_000,
        async () => (await s.db.pool.query('SELECT 1 FROM job WHERE job_id = $1', [id])).rowCount === 1,
      );
      const moved = await app.inject({
        method: 'POST',
        url: `/v1/jobs/${id}/reschedule`,
        headers: A,
        payload: { dueAt: far + 60_000 },
      });
      expect(moved.statusCode).toBe(202);
      await until(
        'rescheduled',
        20_000,
        async () =>
          (await s.db.pool.query('SELECT 1 FROM job WHERE job_id = $1 AND version = 2', [id])).rowCount === 1,
      );
      expect((await app.inject({ method: 'DELETE', url: `/v1/jobs/${id}`, headers: A })).statusCode).toBe(
        202,
      );
      const c = await contracts();
      const mine = async () => {
        const out: { type: string; callerId: string | null }[] = [];
        for (const m of events.raw) {
          const e = await c.decodeEvent(m.value!);
          if (e.jobId === id) out.push({ type: e.type, callerId: e.callerId });
        }
        return out;
      };
      await until('the two events', 30_000, async () => (await mine()).length >= 2);
      expect(await mine()).toEqual([
        { type: 'RESCHEDULED', callerId: 'alice' },
        { type: 'CANCELLED', callerId: 'alice' },
      ]);
    } finally {
      await events.stop();
    }
  });

  it('refuses at the door what the scheduler would reject: an unknown tenant, a stale expectedVersion', async () => {
    const had = rejected.raw.length;
    const ghost = await app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { 'x-api-key': 'key-of-ghost' },
      payload: { jobId: 'ghost-1', queue: s.queue, dueAt: far },
    });
    expect(ghost.statusCode).toBe(400);
    expect(ghost.json()).toMatchObject({ error: { code: 'SCHED_E_UNKNOWN_TENANT' } });
    const stale = await app.inject({
      method: 'POST',
      url: '/v1/jobs/a-job/reschedule',
      headers: A,
      payload: { dueAt: far + 1_000, expectedVersion: 7 },
    });
    expect(stale.statusCode).toBe(409);
    expect(stale.json()).toMatchObject({ error: { code: 'SCHED_E_VERSION_CONFLICT' } });
    // Nothing was sent: no rejection comes, and the job is as it was.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(rejected.raw.length).toBe(had);
    const { rows } = await s.db.pool.query("SELECT version FROM job WHERE job_id = 'a-job'");
    expect(rows).toEqual([{ version: 1 }]);
    expect((await s.db.pool.query("SELECT 1 FROM job WHERE job_id = 'ghost-1'")).rowCount).toBe(0);
  });

  async function refusals(): Promise<number> {
    const text = await metrics.metrics();
    const m = /^sched_api_refusals_total\{[^}]*reason="other_tenant"[^}]*\} (\d+)/m.exec(text);
    return m ? Number(m[1]) : 0;
  }
});
