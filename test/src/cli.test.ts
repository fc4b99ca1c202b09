import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { MessageProducer } from '@sched/kafka';
import { scenarioApi } from './support/api.js';
import { endpoints } from './support/isolation.js';
import { createJob, kafka, recordsOn, until } from './support/kafka.js';
import { runToExit, type ProcessResult } from './support/run-process.js';
import { Scenario } from './support/scenario.js';

// The CLI as an operator runs it: every command given bad input exits with a clear coded error and
// sends nothing (the command topic's end offsets do not move); good input writes through the
// producer client; a replay followed with --follow shows its progress until the jobs are released.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

type Run = ProcessResult;

describe('the CLI on the real stack', () => {
  let s: Scenario;
  let api: FastifyInstance;
  let producer: MessageProducer;
  let apiUrl: string;
  const future = new Date(Date.now() + 3_600_000).toISOString();

  const sched = (args: string[], extra: Record<string, string> = {}): Promise<Run> => {
    const ep = endpoints();
    return runToExit(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: ep.databaseUrl,
        KAFKA_BROKERS: ep.kafkaBrokers.join(','),
        SCHED_REGISTRY_URL: ep.registryUrl,
        SCHED_DB_SCHEMA: s.db.schema,
        SCHED_COMMANDS_TOPIC: s.commandsTopic,
        SCHED_API_URL: apiUrl,
        SCHED_CLI_PERMISSIONS: 'dlq:replay',
        ...extra,
      },
    });
  };
  const commandCount = () => recordsOn(s.commandsTopic);

  beforeAll(async () => {
    s = await Scenario.create('cli', 2);
    await s.startScheduler();
    await s.startWorker();
    producer = await kafka().producer();
    api = await scenarioApi(s, producer, { 'cli-key': { id: 'ops', tenantId: 'default', permissions: [] } });
    await api.listen({ host: '127.0.0.1', port: 0 });
    apiUrl = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await api?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it('refuses bad input on every command with a coded error, sending nothing', async () => {
    const before = await commandCount();
    const q = s.queue;
    const KEY = { SCHED_API_KEY: 'cli-key' };
    const cases: { args: string[]; env?: Record<string, string>; status: number; says: string }[] = [
      { args: ['submit'], status: 2, says: 'submit <queue> <dueAt>' },
      { args: ['submit', q, 'tomorrow'], status: 2, says: 'dueAt must be ISO-8601' },
      { args: ['submit', q, '1765000000'], status: 2, says: 'DUE_AT_OUT_OF_RANGE' },
      { args: ['submit', q, future, '{not json'], status: 2, says: 'payload must be JSON' },
      { args: ['submit', q, future, '{}', '--job-id', 'a b'], status: 2, says: 'INVALID_FIELD' },
      { args: ['cancel'], status: 2, says: 'cancel <jobId>' },
      { args: ['cancel', 'a b'], status: 2, says: 'INVALID_FIELD' },
      { args: ['reschedule', 'x'], status: 2, says: 'dueAt is required' },
      { args: ['reschedule', 'x', '0'], status: 2, says: 'DUE_AT_OUT_OF_RANGE' },
      { args: ['preview', 'every day at nine', 'UTC'], status: 1, says: 'SCHED_E_INVALID_CRON' },
      { args: ['preview', '0 9 * * *', 'Mars/Olympus'], status: 1, says: 'SCHED_E_UNKNOWN_ZONE' },
      {
        args: ['preview', '0 9 * * *', 'UTC', '3', '--dst-skipped', 'NOPE'],
        status: 2,
        says: '--dst-skipped',
      },
      {
        args: ['preview', '0 9 * * *', 'UTC', '3', '--from', 'yesterday'],
        status: 2,
        says: '--from must be',
      },
      { args: ['preview', '0 9 * * *', 'UTC', '0'], status: 2, says: 'n must be 1..1000' },
      { args: ['dlq-replay', 'some-job'], status: 2, says: '--caller ID --reason TEXT' },
      {
        args: ['dlq-replay', '--caller', 'op', '--reason', 'r', '--rate', '0', 'j'],
        status: 2,
        says: '--rate',
      },
      { args: ['region', 'promote', 'eu-west'], status: 2, says: '--caller ID --reason TEXT' },
      { args: ['region', 'elsewhere'], status: 2, says: 'region show' },
      { args: ['workers', 'extra'], status: 2, says: 'workers' },
      { args: ['no-such-command'], status: 2, says: 'unknown command' },
      { args: ['job', 'create', q, future], status: 2, says: 'SCHED_API_KEY is required' },
      { args: ['job', 'create', q, 'tomorrow'], env: KEY, status: 2, says: 'dueAt must be ISO-8601' },
      {
        args: ['job', 'create', 'no-such-queue', future],
        env: KEY,
        status: 1,
        says: 'SCHED_E_UNKNOWN_QUEUE',
      },
      { args: ['job', 'cancel', 'no-such-job'], env: KEY, status: 1, says: 'SCHED_E_NOT_FOUND' },
      { args: ['job', 'create', q, future, '--wait'], env: KEY, status: 2, says: '--wait needs a value' },
      { args: ['command', 'no-such-command'], env: KEY, status: 1, says: 'SCHED_E_NOT_FOUND' },
      { args: ['job', 'list', '--state', 'SLEEPING'], env: KEY, status: 1, says: 'SCHED_E_VALIDATION' },
      { args: ['schedule', 'show'], env: KEY, status: 2, says: 'schedule list' },
      { args: ['schedule', 'show', 'no-such-schedule'], env: KEY, status: 1, says: 'SCHED_E_NOT_FOUND' },
      {
        args: ['tenant', 'create', 'x'],
        env: { SCHED_API_KEY: 'wrong' },
        status: 1,
        says: 'SCHED_E_UNAUTHENTICATED',
      },
    ];
    // Six at a time: each is a Node process of its own.
    const runs: Run[] = [];
    for (let i = 0; i < cases.length; i += 6)
      runs.push(...(await Promise.all(cases.slice(i, i + 6).map((c) => sched(c.args, c.env)))));
    cases.forEach((c, i) => {
      const r = runs[i]!;
      const what = `sched ${c.args.join(' ')}: exit ${r.status}, stderr ${r.stderr.slice(-400)}`;
      expect(r.status, what).toBe(c.status);
      expect(r.stderr, what).toContain(c.says);
      expect(r.stdout.trim(), what).toBe('');
    });
    expect(await commandCount()).toBe(before);
    console.log(`cli: ${cases.length} bad inputs refused with their codes, 0 records sent`);
  });

  it('previews from a given instant under the DST policies given', async () => {
    const night = ['preview', '30 2 * * *', 'America/New_York', '3', '--from', '2026-03-06T12:00:00Z'];
    const shifted = await sched(night);
    expect(shifted.status, shifted.stderr).toBe(0);
    expect(shifted.stdout.split('\n')[1]).toMatch(/2026-03-08T03:00:00-04:00\s+SHIFTED$/);
    const skipped = await sched([...night, '--dst-skipped', 'SKIP']);
    expect(skipped.stdout).not.toContain('2026-03-08');
    const both = await sched([
      'preview',
      '30 1 * * *',
      'America/New_York',
      '2',
      '--from',
      '2026-10-31T12:00:00Z',
      '--dst-repeated',
      'BOTH',
    ]);
    expect(
      both.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(/\s+/)[2]),
    ).toEqual(['REPEATED_FIRST', 'REPEATED_SECOND']);
  });

  it('submits through the producer client, as the operator it names', async () => {
    const r = await sched(['submit', s.queue, future, '{"n":1}', '--job-id', 'cli-ok'], {
      SCHED_CLI_CALLER: 'alice@ops',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ jobId: 'cli-ok', commandId: expect.any(String) });
    await until('the job exists', 20_000, async () => (await s.jobStates()).get('cli-ok') === 'SCHEDULED');
    const c = await sched(['cancel', 'cli-ok'], { SCHED_CLI_CALLER: 'alice@ops' });
    expect(c.status, c.stderr).toBe(0);
    await until('cancelled', 20_000, async () => (await s.jobStates()).get('cli-ok') === 'CANCELLED');
  });

  it('dlq-replay --follow shows the release with its rate and ETA until every job has left', async () => {
    const ids = ['cli-dead-1', 'cli-dead-2', 'cli-dead-3'];
    await s.producer.send(
      ids.map((id) => createJob(id, s.queue, Date.now(), { payload: Buffer.from('{"fail":"permanent"}') })),
    );
    await until('dead-lettered', 60_000, async () => {
      const states = await s.jobStates();
      return ids.every((id) => states.get(id) === 'DEAD');
    });
    const r = await sched([
      'dlq-replay',
      '--caller',
      'op',
      '--reason',
      'fixed',
      '--rate',
      '2',
      '--follow',
      ...ids,
    ]);
    expect(r.status, r.stderr).toBe(0);
    const res = JSON.parse(r.stdout) as { replayed: string[]; refused: unknown[] };
    expect([...res.replayed].sort()).toEqual(ids);
    expect(res.refused).toEqual([]);
    expect(r.stderr).toMatch(/3\/3 released \| [\d.]+\/s \| ETA/);
    console.log(`cli: dlq-replay --follow ended with "${r.stderr.trim().split('\n').at(-1)}"`);
  });
});
