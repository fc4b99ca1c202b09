import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { MessageProducer } from '@sched/kafka';
import { createJob, kafka } from './support/kafka.js';
import { scenarioApi } from './support/api.js';
import { Scenario } from './support/scenario.js';

// Tenants administered through the API and the CLI alone (#53): a bootstrap admin key creates a
// tenant and issues it a key; that key creates, reads and cancels jobs through the real HTTP
// server and the CLI, waiting for the scheduler's decision; a revoked key is refused within the
// key cache; a disabled tenant is refused by the API and its commands rejected by the scheduler;
// a paused queue dispatches nothing until it is resumed.

const ROOT = new URL('../..', import.meta.url).pathname;

describe('tenant and queue administration on the real stack', () => {
  let s: Scenario;
  let app: FastifyInstance;
  let producer: MessageProducer;
  let url: string;
  let tenantKey = '';
  let keyId = '';

  /** The CLI as a user runs it: its own process, talking to the API over HTTP. */
  const cli = (key: string, ...args: string[]) =>
    new Promise<{ code: number; out: string; err: string }>((resolve) => {
      execFile(
        'npx',
        ['tsx', 'apps/cli/src/main.ts', ...args],
        { cwd: ROOT, env: { ...process.env, SCHED_API_URL: url, SCHED_API_KEY: key }, encoding: 'utf8' },
        (error, out, err) =>
          resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out, err }),
      );
    });
  const json = <T>(out: string) => JSON.parse(out) as T;
  const get = async (path: string, key: string) => {
    const res = await fetch(`${url}${path}`, { headers: { 'x-api-key': key } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    s = await Scenario.create('tenantadm', 2);
    await s.startScheduler();
    producer = await kafka().producer();
    app = await scenarioApi(s, producer, {
      'root-key': { id: 'root', tenantId: 'default', permissions: ['admin'] },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address() as { port: number };
    url = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(async () => {
    await app?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it('creates a tenant and issues it a key through the CLI; the key is stored hashed', async () => {
    const created = await cli('root-key', 'tenant', 'create', 'acme', '--max-pending', '1000');
    expect(created.err).toBe('');
    expect(json(created.out)).toMatchObject({ tenantId: 'acme', maxPendingJobs: 1000, disabledAt: null });
    const issued = await cli('root-key', 'tenant', 'key', 'acme', '--caller', 'acme-svc');
    expect(issued.code).toBe(0);
    const k = json<{ key: string; keyId: string; tenantId: string; callerId: string }>(issued.out);
    expect(k).toMatchObject({ tenantId: 'acme', callerId: 'acme-svc' });
    expect(k.key).toMatch(/^sk_/);
    tenantKey = k.key;
    keyId = k.keyId;
    const { rows } = await s.db.pool.query<{ digest: string }>(
      'SELECT digest FROM api_key WHERE key_id = $1',
      [keyId],
    );
    expect(rows[0]!.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(rows[0]!.digest).not.toContain(tenantKey.slice(3));
    const listed = await cli('root-key', 'tenant', 'keys', 'acme');
    expect(listed.out).not.toContain(tenantKey);
    // Not an admin: the new key cannot create tenants.
    const refused = await cli(tenantKey, 'tenant', 'create', 'evil');
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('SCHED_E_FORBIDDEN');
  });

  it('the new key runs jobs end to end through the CLI, waiting on each command', async () => {
    const due = new Date(Date.now() + 3_600_000).toISOString();
    const t0 = Date.now();
    const made = await cli(
      tenantKey,
      'job',
      'create',
      s.queue,
      due,
      '{"n":1}',
      '--job-id',
      'acme-1',
      '--wait',
      '10s',
    );
    expect(made.err).toBe('');
    expect(made.code).toBe(0);
    expect(json(made.out)).toMatchObject({
      jobId: 'acme-1',
      command: { status: 'applied', kind: 'CreateJob' },
    });
    console.log(`tenant admin: a new tenant's job created and applied via the CLI in ${Date.now() - t0} ms`);
    const shown = await cli(tenantKey, 'job', 'show', 'acme-1');
    expect(json(shown.out)).toMatchObject({ jobId: 'acme-1', state: 'SCHEDULED' });
    const cancelled = await cli(tenantKey, 'job', 'cancel', 'acme-1', '--wait', '10s');
    expect(cancelled.code).toBe(0);
    expect(json(cancelled.out)).toMatchObject({ command: { status: 'applied', kind: 'CancelJob' } });
    expect((await get('/v1/jobs/acme-1', tenantKey)).body).toMatchObject({ state: 'CANCELLED' });
    // The admin of another tenant sees the job as unknown (tenancy holds for admins too).
    expect((await get('/v1/jobs/acme-1', 'root-key')).status).toBe(404);
  });

  it('a revoked key is refused within the key cache', async () => {
    expect((await get('/v1/tenants/acme', tenantKey)).status).toBe(200);
    const revoked = await cli('root-key', 'tenant', 'revoke', 'acme', keyId);
    expect(json(revoked.out)).toMatchObject({ keyId, revokedAt: expect.any(String) });
    const t0 = Date.now();
    let status = 200;
    while (Date.now() - t0 < 10_000) {
      status = (await get('/v1/tenants/acme', tenantKey)).status;
      if (status === 401) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(401);
    console.log(`tenant admin: a revoked key refused ${Date.now() - t0} ms after the revocation`);
  });

  it('a disabled tenant is refused by the API and its commands rejected by the scheduler', async () => {
    const issued = await cli('root-key', 'tenant', 'key', 'acme', '--caller', 'acme-2');
    const key = json<{ key: string }>(issued.out).key;
    expect((await get('/v1/tenants/acme', key)).status).toBe(200);
    expect((await cli('root-key', 'tenant', 'disable', 'acme')).code).toBe(0);
    const refused = await get('/v1/tenants/acme', key);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { code: 'SCHED_E_TENANT_DISABLED' } });
    // The command path: the scheduler re-reads the names every 5 s.
    await new Promise((r) => setTimeout(r, 5_500));
    const cmd = createJob('acme-2', s.queue, Date.now() + 3_600_000);
    cmd.tenantId = 'acme';
    await s.producer.send([cmd]);
    const t0 = Date.now();
    let outcome: { outcome: string; detail: string } | undefined;
    while (!outcome && Date.now() - t0 < 15_000) {
      const { rows } = await s.db.pool.query(
        'SELECT outcome, detail FROM command_applied WHERE command_id = $1',
        [cmd.commandId],
      );
      outcome = rows[0];
      if (!outcome) await new Promise((r) => setTimeout(r, 100));
    }
    expect(outcome).toMatchObject({ outcome: 'rejected', detail: expect.stringContaining('UNKNOWN_TENANT') });
    // Enabled again, the same key works.
    expect((await cli('root-key', 'tenant', 'enable', 'acme')).code).toBe(0);
    expect((await get('/v1/tenants/acme', key)).status).toBe(200);
    // An admin cannot disable its own tenant.
    const own = await cli('root-key', 'tenant', 'disable', 'default');
    expect(own.err).toContain('SCHED_E_VALIDATION');
  });

  it('a paused queue dispatches nothing until it is resumed', async () => {
    const paused = await cli('root-key', 'queue', 'pause', s.queue);
    expect(json(paused.out)).toMatchObject({ queue: s.queue, pausedAt: expect.any(String) });
    await new Promise((r) => setTimeout(r, 2_000)); // the schedulers read it every second
    const made = await cli(
      'root-key',
      'job',
      'create',
      s.queue,
      new Date(Date.now() + 500).toISOString(),
      '{}',
      '--job-id',
      'held-1',
      '--wait',
      '10s',
    );
    expect(made.code).toBe(0);
    await new Promise((r) => setTimeout(r, 3_000));
    const state = async () =>
      (await s.db.pool.query<{ state: string }>("SELECT state FROM job WHERE job_id = 'held-1'")).rows[0]!
        .state;
    expect(await state()).toBe('SCHEDULED');
    expect((await cli('root-key', 'queue', 'resume', s.queue)).code).toBe(0);
    const t0 = Date.now();
    while ((await state()) === 'SCHEDULED' && Date.now() - t0 < 15_000)
      await new Promise((r) => setTimeout(r, 100));
    expect(await state()).toBe('DISPATCHED');
    console.log(
      `tenant admin: a paused queue held its due job 3 s; dispatched ${Date.now() - t0} ms after resume`,
    );
  });
});
