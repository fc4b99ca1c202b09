/**
 * `npm run demo [-- --once] [-- --jobs N]`: brings the local stack up, runs the real scheduler and
 * worker processes, sends a demo workload (N jobs due over the next seconds, one cancelled, one
 * rescheduled), and reports what happened from Postgres and the dispatch topic.
 * `--once` exits when the workload is done; otherwise the platform keeps running until Ctrl-C.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Contracts, type CommandInput } from '@sched/contracts';
import { kafkajsPort } from '@sched/kafka';
import { ensureStackUp, stackEndpoints } from '@sched/local-stack';
import { silentLogger } from '@sched/logging';
import { createPool } from '@sched/store';
import { startApp, type RunningApp } from './app-processes.js';

const args = process.argv.slice(2);
const once = args.includes('--once');
const jobsArg = args.indexOf('--jobs');
const n = jobsArg >= 0 ? Number(args[jobsArg + 1]) : 300;

const say = (line: string) => process.stdout.write(`[demo] ${line}\n`);

/**
 * The tutorial's path through the API: a tenant created with the admin key, a key issued to it,
 * a job created with that key and its command's status awaited.
 */
async function frontDoor(apiUrl: string, adminKey: string): Promise<void> {
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${apiUrl}${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const out = (await res.json()) as Record<string, unknown>;
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(out)}`);
    return out;
  };
  await call(adminKey, 'PUT', '/v1/tenants/demo-tenant', { maxPendingJobs: 10_000 });
  const { key } = (await call(adminKey, 'POST', '/v1/tenants/demo-tenant/keys', {
    callerId: 'demo-service',
  })) as {
    key: string;
  };
  const made = await call(key, 'POST', '/v1/jobs', {
    queue: 'default',
    dueAt: Date.now() + 2_000,
    payload: { hello: 'api' },
  });
  const status = await call(key, 'GET', `${String(made.statusUrl)}?wait=10s`);
  say(
    `API: tenant demo-tenant created, key issued, job ${String(made.jobId)} created: command ${String(status.status)}`,
  );
}

async function main(): Promise<void> {
  say('bringing the local stack up (first run fetches Kafka, Debezium and Apicurio through Maven)…');
  await ensureStackUp();
  const ep = stackEndpoints();
  const logDir = join(ep.stateDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const appLog = createWriteStream(join(logDir, 'demo-apps.log'), { flags: 'a' });
  const env = {
    DATABASE_URL: ep.databaseUrl,
    KAFKA_BROKERS: ep.kafkaBrokers.join(','),
    SCHED_REGISTRY_URL: ep.registryUrl,
    SCHED_METRICS_PORT: '9464',
    SCHED_WORKER_METRICS_PORT: '9465',
  };
  const apps: RunningApp[] = [];
  const stopAll = async () => {
    for (const a of apps.reverse()) await a.stop();
    appLog.end();
  };
  process.on('SIGINT', () => {
    say('stopping…');
    void stopAll().then(() => process.exit(0));
  });

  apps.push(await startApp('scheduler', env, (l) => appLog.write(`scheduler ${l}\n`)));
  apps.push(await startApp('worker', env, (l) => appLog.write(`worker ${l}\n`)));
  // The API, with a bootstrap admin key (SCHED_API_KEYS) made for this run.
  const adminKey = `demo-admin-${randomBytes(12).toString('hex')}`;
  const api = await startApp(
    'api',
    {
      ...env,
      SCHED_API_KEYS: `${adminKey}=demo-admin:default:admin`,
      SCHED_API_PORT: process.env.SCHED_API_PORT ?? '3000',
    },
    (l) => appLog.write(`api ${l}\n`),
  );
  apps.push(api);
  const apiUrl = `http://${api.info.host}:${api.info.port}`;
  say(`scheduler metrics: http://127.0.0.1:${apps[0]!.info.metricsPort}/metrics`);
  say(`worker metrics:    http://127.0.0.1:${apps[1]!.info.metricsPort}/metrics`);
  say(`app logs:          ${join(logDir, 'demo-apps.log')}`);
  say(`HTTP API:          ${apiUrl}  (admin key for this run: SCHED_API_KEY=${adminKey})`);
  await frontDoor(apiUrl, adminKey);

  const contracts = new Contracts({ registryUrl: ep.registryUrl });
  await contracts.registerAll();
  const kafka = kafkajsPort({ clientId: 'demo', brokers: ep.kafkaBrokers, logger: silentLogger() });
  const producer = await kafka.producer();
  const run = randomUUID().slice(0, 8);
  const start = Date.now() + 3_000;
  const ids = Array.from({ length: n }, (_, i) => `demo-${run}-${i}`);
  const cmd = (body: CommandInput['body']): CommandInput => ({
    commandId: randomUUID(),
    tenantId: 'default',
    issuedAtMs: Date.now(),
    body,
  });
  const commands = ids.map((jobId, i) =>
    cmd({
      kind: 'CreateJob',
      value: {
        jobId,
        queue: 'default',
        dueAtMs: start + Math.floor((i * 10_000) / n),
        payload: Buffer.from(JSON.stringify({ i })),
      },
    }),
  );
  await producer.send(
    'sched.commands',
    commands.map((c) => ({
      key: (c.body.value as { jobId: string }).jobId,
      value: contracts.encodeCommand(c),
    })),
  );
  say(`sent ${n} CreateJob commands due over the next 10 s (run ${run})`);
  const cancelled = ids[n - 1]!;
  const rescheduled = ids[n - 2]!;
  const newDue = start + 12_000;
  await producer.send('sched.commands', [
    {
      key: cancelled,
      value: contracts.encodeCommand(cmd({ kind: 'CancelJob', value: { jobId: cancelled, reason: 'demo' } })),
    },
    {
      key: rescheduled,
      value: contracts.encodeCommand(
        cmd({ kind: 'RescheduleJob', value: { jobId: rescheduled, dueAtMs: newDue, expectedVersion: null } }),
      ),
    },
  ]);
  say(`cancelled ${cancelled}; rescheduled ${rescheduled} to +12 s`);
  await producer.disconnect();

  const pool = createPool({ databaseUrl: ep.databaseUrl, max: 2 });
  const deadline = Date.now() + 60_000;
  let summary: Record<string, number> = {};
  let last = '';
  for (;;) {
    const { rows } = await pool.query<{ state: string; n: number }>(
      'SELECT state, count(*)::int AS n FROM job WHERE job_id LIKE $1 GROUP BY state',
      [`demo-${run}-%`],
    );
    summary = Object.fromEntries(rows.map((r) => [r.state, r.n]));
    const done = (summary.SUCCEEDED ?? 0) + (summary.CANCELLED ?? 0);
    const line = JSON.stringify(summary);
    if (line !== last) {
      // Overwrite in place on a terminal; one line per change in logs.
      process.stdout.write(
        process.stdout.isTTY ? `\r[demo] jobs by state: ${line}   ` : `[demo] jobs by state: ${line}\n`,
      );
      last = line;
    }
    if (done === n || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  if (process.stdout.isTTY) process.stdout.write('\n');
  const lag = await pool.query<{ p50: number; p99: number; max: number; early: number }>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99,
            max(ms) AS max, count(*) FILTER (WHERE ms < 0)::int AS early
     FROM (SELECT extract(epoch FROM dispatched_at - due_at) * 1000 AS ms FROM job
           WHERE job_id LIKE $1 AND dispatched_at IS NOT NULL) t`,
    [`demo-${run}-%`],
  );
  const l = lag.rows[0]!;
  say(
    `due → claim lag (database time): p50 ${Number(l.p50).toFixed(1)} ms, p99 ${Number(l.p99).toFixed(1)} ms, max ${Number(l.max).toFixed(1)} ms; early: ${l.early}`,
  );
  const ok = (summary.SUCCEEDED ?? 0) === n - 1 && (summary.CANCELLED ?? 0) === 1 && l.early === 0;
  say(
    ok
      ? `all ${n - 1} jobs ran once, the cancelled one never did`
      : `unexpected outcome: ${JSON.stringify(summary)}`,
  );
  await pool.end();
  if (once) {
    await stopAll();
    say('done (--once): the stack keeps running; `npm run stack -- down` stops it');
    process.exit(ok ? 0 : 1);
  }
  say('the platform keeps running; produce to sched.commands or press Ctrl-C to stop the apps');
}

main().catch((err: unknown) => {
  console.error('[demo] failed:', err);
  process.exit(1);
});
