import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import { ensureStackUp, stackEndpoints } from '@sched/local-stack';
import { kafkajsPort } from '@sched/kafka';
import { silentLogger } from '@sched/logging';
import { createPool, dropSchema, migrate } from '@sched/store';
import type { BenchSuite, SuiteOutcome } from '../bench-suite.js';
import { killStartedProcesses } from '../e2e/child-process.js';
import { cpuWindow } from '../e2e/process-cpu.js';
import { StartHub } from '../e2e/start-log.js';
import { stackProcessGroups, startScheduler } from '../e2e/systems/ours-processes.js';
import { machineInfo } from '../machine.js';

/*
 * `npm run bench -- catchup [--jobs N] [--rate R] [--quick] [--json FILE]`: the catch-up drain
 * after an outage. N SCHEDULED jobs overdue by 10-20 minutes (written straight into a schema of
 * the local stack, as an outage leaves them: 1 % of them a second tenant's, 10 % priority 5) are
 * drained by one scheduler process started on them; the figures are the time until all are
 * claimed, the drain rate once it has started, Postgres CPU per job, how long the catch-up's sorted
 * reads took, and two order checks (priority strictly first; the small tenant not held behind the
 * big one).
 */

const USAGE = 'usage: npm run bench -- catchup [--jobs N] [--rate R] [--quick] [--json FILE]';
const PARTITIONS = 4;
const INSERT_CHUNK = 250_000;
const say = (line: string) => process.stdout.write(`[catchup] ${line}\n`);

interface Options {
  jobs: number;
  /** SCHED_CATCH_UP_RATE_PER_SEC; undefined: the scheduler's default. */
  rate: number | undefined;
}

function parseArgs(argv: readonly string[]): Options {
  const opts: Options = { jobs: 1_000_000, rate: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const num = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`${a} needs a positive integer\n${USAGE}`);
      return v;
    };
    if (a === '--jobs') opts.jobs = num();
    else if (a === '--rate') opts.rate = num();
    else if (a === '--quick') opts.jobs = 100_000;
    else throw new Error(`unknown option "${a}"\n${USAGE}`);
  }
  return opts;
}

/** The scheduler's /metrics: each series summed over its label sets. */
async function metrics(port: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  for (const line of (await res.text()).split('\n')) {
    const m = /^([a-z_]+)(?:\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (m) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[2]));
  }
  return out;
}

async function run(argv: readonly string[]): Promise<SuiteOutcome> {
  const opts = parseArgs(argv);
  const m = machineInfo();
  say(
    `${m.cores} × ${m.cpuModel}, Node ${m.nodeVersion}; ${opts.jobs} overdue jobs, catch-up rate ${opts.rate ?? 'default'}`,
  );
  await ensureStackUp();
  const ep = stackEndpoints();
  const schema = `bench_catchup_${randomBytes(3).toString('hex')}`;
  const queue = schema.replace(/_/g, '-');
  const topic = `bench.${schema}.commands`;
  await migrate(ep.databaseUrl, { schema });
  const pool = createPool({ databaseUrl: ep.databaseUrl, schema, max: 2, applicationName: 'catchup-bench' });
  const kafka = kafkajsPort({ clientId: schema, brokers: ep.kafkaBrokers, logger: silentLogger() });
  const admin = await kafka.admin();
  let scheduler: Awaited<ReturnType<typeof startScheduler>> | undefined;
  try {
    await pool.query('INSERT INTO queue (queue) VALUES ($1)', [queue]);
    await pool.query("INSERT INTO tenant (tenant_id) VALUES ('small') ON CONFLICT DO NOTHING");
    const retention = { 'retention.ms': String(30 * 60_000) };
    await admin.ensureTopics([
      { topic, partitions: PARTITIONS, config: retention },
      { topic: `sched.dispatch.${queue}`, partitions: PARTITIONS, config: retention },
    ]);
    const t0 = Date.now();
    for (let from = 1; from <= opts.jobs; from += INSERT_CHUNK) {
      await pool.query(
        `INSERT INTO job (job_id, partition, tenant_id, queue, state, due_at, priority, payload)
         SELECT 'cu-' || g, g % ${PARTITIONS}, CASE WHEN g % 100 = 0 THEN 'small' ELSE 'default' END, $3,
                'SCHEDULED', now() - interval '20 minutes' + (g % 600000) * interval '1 millisecond',
                CASE WHEN g % 10 = 0 THEN 5 ELSE 0 END, '\\x00'::bytea
         FROM generate_series($1::int, $2::int) g`,
        [from, Math.min(opts.jobs, from + INSERT_CHUNK - 1), queue],
      );
    }
    await pool.query('VACUUM ANALYZE job');
    say(
      `${opts.jobs} overdue jobs written in ${((Date.now() - t0) / 1000).toFixed(1)} s; starting a scheduler`,
    );

    const infra = await stackProcessGroups();
    const cpu = cpuWindow(() => (scheduler ? { ...infra, scheduler: [scheduler.pid] } : infra));
    const startedAt = Date.now();
    const prev = process.env.E2E_OURS_SCHEDULER_ENV;
    // No worker takes the dispatches: a lease longer than the run keeps the reaper from returning
    // them to SCHEDULED (and the wheel) while the drain is measured, and admission control is off
    // (it would pause the queue once its share of SCHED_QUEUE_MAX_UNSTARTED is dispatched).
    const env = ['SCHED_DISPATCH_LEASE_MS=7200000', 'SCHED_QUEUE_MAX_UNSTARTED=0'];
    if (opts.rate !== undefined) env.push(`SCHED_CATCH_UP_RATE_PER_SEC=${opts.rate}`);
    process.env.E2E_OURS_SCHEDULER_ENV = [prev, ...env].filter(Boolean).join(',');
    scheduler = await startScheduler(new StartHub(), schema, topic, 0);
    if (prev === undefined) delete process.env.E2E_OURS_SCHEDULER_ENV;
    else process.env.E2E_OURS_SCHEDULER_ENV = prev;
    const port = Number(scheduler.ready.metricsPort);
    const capMs = Math.max(120_000, (opts.jobs / (opts.rate ?? 5_000)) * 4_000 + 60_000);
    let claimed = 0;
    let firstClaimAt = 0;
    let lastReport = Date.now();
    while (claimed < opts.jobs && Date.now() - startedAt < capMs) {
      await new Promise((r) => setTimeout(r, 500));
      claimed = (await metrics(port)).get('sched_catch_up_claimed_total') ?? 0;
      if (claimed > 0 && firstClaimAt === 0) firstClaimAt = Date.now();
      if (Date.now() - lastReport >= 10_000) {
        lastReport = Date.now();
        say(`  ${claimed} claimed after ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
      }
    }
    const doneAt = Date.now();
    const window = cpu.end();
    const final = await metrics(port);
    const left = (
      await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM job WHERE state = 'SCHEDULED'")
    ).rows[0]!.n;
    // Priority first: priority-0 jobs claimed before the last priority-5 one (a claim transaction's
    // time is its rows' dispatched_at, so a batch holding both counts none). Tenants in turn: how
    // long after the first priority-0 claim each tenant's last one came (the small tenant's 1 %
    // should be done early, not after the big tenant's backlog).
    const order = (
      await pool.query<{ inversions: number; small_last_s: number; big_last_s: number }>(
        `WITH last_high AS (SELECT max(dispatched_at) AS t FROM job WHERE priority = 5)
         SELECT (SELECT count(*)::int FROM job, last_high WHERE priority = 0 AND dispatched_at < last_high.t) AS inversions,
                extract(epoch FROM (SELECT max(dispatched_at) FILTER (WHERE tenant_id = 'small') - min(dispatched_at) FROM job WHERE priority = 0))::float8 AS small_last_s,
                extract(epoch FROM (SELECT max(dispatched_at) FILTER (WHERE tenant_id = 'default') - min(dispatched_at) FROM job WHERE priority = 0))::float8 AS big_last_s`,
      )
    ).rows[0]!;
    const seconds = (doneAt - startedAt) / 1000;
    const drainSeconds = firstClaimAt ? (doneAt - firstClaimAt) / 1000 : seconds;
    const reads = final.get('sched_catch_up_read_seconds_count') ?? 0;
    const readSeconds = final.get('sched_catch_up_read_seconds_sum') ?? 0;
    const pgPct = window.byGroup.postgres ?? 0;
    const result = {
      system: 'ours',
      workload: 'catchup',
      jobs: opts.jobs,
      ratePerSec: opts.rate ?? 'default',
      claimed,
      left,
      seconds: Math.round(seconds * 10) / 10,
      startupSeconds: firstClaimAt ? Math.round(((firstClaimAt - startedAt) / 1000) * 10) / 10 : null,
      jobsPerSec: Math.round(claimed / drainSeconds),
      reads,
      readSeconds: Math.round(readSeconds * 10) / 10,
      postgresUsPerJob: claimed ? Math.round(((pgPct / 100) * window.seconds * 1e6) / claimed) : null,
      priorityInversions: order.inversions,
      smallTenantDoneAfterS: Math.round(order.small_last_s * 10) / 10,
      bigTenantDoneAfterS: Math.round(order.big_last_s * 10) / 10,
      cpuPct: window.byGroup,
      machinePct: window.machinePct,
      // Not in any group: Postgres's parallel query workers (they exit after each sort, so their
      // CPU is missing from the postgres group), the bench itself, the rest of the machine.
      othersPct: window.othersPct,
      /** The whole machine's CPU over the drain, per job claimed (µs; sorts in parallel workers included). */
      machineUsPerJob: claimed
        ? Math.round(((window.machinePct / 100) * cpus().length * window.seconds * 1e6) / claimed)
        : null,
    };
    say(
      `all ${claimed} claimed after ${result.seconds} s (first claim after ${result.startupSeconds} s): ${result.jobsPerSec} jobs/s once started; ` +
        `${reads} sorted reads, ${result.readSeconds} s in all; Postgres (long-lived processes) ${result.postgresUsPerJob} µs/job; ` +
        `left SCHEDULED ${left}; priority inversions ${order.inversions}; of priority 0, the small tenant's last claimed ${result.smallTenantDoneAfterS} s after the first, the big tenant's ${result.bigTenantDoneAfterS} s`,
    );
    say(
      `CPU, % of one core: ${JSON.stringify(window.byGroup)}, other ${window.othersPct} (Postgres parallel workers among them); machine ${window.machinePct} % of all cores, ${result.machineUsPerJob} µs of CPU a job`,
    );
    if (claimed < opts.jobs) say(`NOT all claimed within the ${capMs / 1000} s cap`);
    return { results: [result] };
  } finally {
    await scheduler?.stop().catch(() => undefined);
    killStartedProcesses();
    await admin.disconnect().catch(() => undefined);
    await pool.end().catch(() => undefined);
    if (!process.env.E2E_KEEP_SCHEMA) await dropSchema(ep.databaseUrl, schema).catch(() => undefined);
  }
}

export const catchUpSuite: BenchSuite = {
  name: 'catchup',
  description:
    'catch-up drain of an overdue backlog after an outage (ours only): time, rate, Postgres µs/job',
  run,
};
