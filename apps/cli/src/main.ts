/**
 * `npm run sched -- <command>`: the operators' and scripts' CLI. An operator tool with the platform's
 * own rights: it connects to Postgres and Kafka directly with whatever DATABASE_URL and brokers it is
 * given, so whoever runs it can do anything those credentials allow. Its `--caller`, `--tenant` and
 * SCHED_CLI_PERMISSIONS are recorded in the audit log as the operator's word, not checked against
 * anything: tenants and their users go through the HTTP API, which authenticates every request.
 *
 *   submit <queue> <dueAt ISO|ms> [payload-json] [--job-id ID]   create a job (prints its id)
 *   cancel <jobId> | reschedule <jobId> <dueAt>                    change a job
 *   inspect <jobId>                                               state, version, attempts (Postgres)
 *   preview <cron|every:MS> <timeZone> [n]                        next fire times, UTC and local, DST marked
 *   dlq-replay --caller ID --reason TEXT [--tenant ID] [--rate N] <jobId…>
 *                                                               replay of one tenant's (default `default`)
 *                                                               dead letters (dlq:replay in SCHED_CLI_PERMISSIONS)
 *   region show | region promote <region> --caller ID --reason TEXT
 *                                                               the home region; a promotion fences every
 *                                                               owner at once (needs region:promote)
 *   workers                                                      every worker process's liveness row: alive
 *                                                               or gone, since when, RUNNING jobs it holds
 *   demo [--once] | stack <up|down|status|logs|restart>           the demo; the local stack
 *
 * Through the HTTP API, authenticated by SCHED_API_KEY (see apps/cli/src/api-commands.ts):
 *   tenant …, queue …, job create|cancel|reschedule|show … [--wait 10s], command <id> [--wait 10s]
 *
 * Reads DATABASE_URL, KAFKA_BROKERS, SCHED_REGISTRY_URL (default: the local stack) and
 * SCHED_COMMANDS_TOPIC. Exit codes: 0 ok, 1 failed, 2 bad usage.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CommandRefusedError, SchedulerClient } from '@sched/client';
import { registryPayloadValidator, replayDeadLetters } from '@sched/dead-letters';
import { stackEndpoints } from '@sched/local-stack';
import { silentLogger } from '@sched/logging';
import { preview } from '@sched/recurrence';
import { createPool, homeRegion, regionPromote, workerList } from '@sched/store';
import { API_COMMANDS, runApiCommand } from './api-commands.js';
import { helpFor } from './help.js';
import { followProgress } from './progress.js';

const env = process.env;
const [command, ...args] = process.argv.slice(2);
const ep = stackEndpoints(env);
const databaseUrl = env.DATABASE_URL ?? ep.databaseUrl;
const brokers = env.KAFKA_BROKERS?.split(',') ?? ep.kafkaBrokers;
const registryUrl = env.SCHED_REGISTRY_URL ?? ep.registryUrl;
const topic = env.SCHED_COMMANDS_TOPIC ?? 'sched.commands';

function usage(message: string): never {
  process.stderr.write(`sched: ${message}\n(sched --help lists the commands)\n`);
  process.exit(2);
}

function instant(v: string | undefined, what: string): number {
  if (v === undefined) usage(`${what} is required`);
  const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isSafeInteger(ms) || !/^\d+$|T.*(Z|[+-]\d\d:?\d\d)$/.test(v))
    usage(`${what} must be ISO-8601 with an offset or ms since the epoch`);
  return ms;
}

function flag(name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
}

/**
 * The producer client, for the operator commands that write to the command topic: each command is
 * checked with the scheduler's rules first, and one it would reject is refused here (exit 2, its
 * reason code, nothing sent).
 */
async function withClient<T>(f: (client: SchedulerClient) => Promise<T>): Promise<T> {
  const client = await SchedulerClient.connect({
    brokers,
    registryUrl,
    tenantId: env.SCHED_TENANT ?? 'default',
    callerId: env.SCHED_CLI_CALLER ?? 'cli',
    commandsTopic: topic,
    clientId: 'sched-cli',
    logger: silentLogger(),
  });
  try {
    return await f(client);
  } catch (err) {
    if (err instanceof CommandRefusedError) usage(`${err.reason}: ${err.message} (nothing was sent)`);
    throw err;
  } finally {
    await client.close();
  }
}

/** A payload given on the command line: JSON, sent as its UTF-8 bytes. */
function jsonPayload(text: string | undefined): Buffer {
  if (text === undefined) return Buffer.from('null');
  try {
    JSON.parse(text);
  } catch (err) {
    usage(`payload must be JSON (${(err as Error).message})`);
  }
  return Buffer.from(text);
}

async function main(): Promise<void> {
  const help = helpFor(command, args);
  if (help !== undefined) {
    if (command === undefined) {
      process.stderr.write(help);
      process.exit(2);
    }
    process.stdout.write(help.endsWith('\n') ? help : `${help}\n`);
    return;
  }
  switch (command) {
    case 'submit': {
      const jobId = flag('--job-id');
      const [queue, due, payload] = args;
      if (!queue) usage('submit <queue> <dueAt> [payload-json]');
      const dueAt = instant(due, 'dueAt');
      const bytes = jsonPayload(payload);
      const receipt = await withClient((c) =>
        c.createJob({ queue, dueAt, payload: bytes, ...(jobId === undefined ? {} : { jobId }) }),
      );
      console.log(JSON.stringify(receipt));
      return;
    }
    case 'cancel': {
      const [jobId] = args;
      if (!jobId) usage('cancel <jobId>');
      console.log(JSON.stringify(await withClient((c) => c.cancelJob(jobId, { reason: 'cli' }))));
      return;
    }
    case 'reschedule': {
      const [jobId, due] = args;
      if (!jobId) usage('reschedule <jobId> <dueAt>');
      const dueAt = instant(due, 'dueAt');
      console.log(JSON.stringify(await withClient((c) => c.rescheduleJob(jobId, dueAt))));
      return;
    }
    case 'inspect': {
      const [jobId] = args;
      if (!jobId) usage('inspect <jobId>');
      const pool = createPool({ databaseUrl, schema: env.SCHED_DB_SCHEMA ?? 'public', max: 1 });
      const job = await pool.query(
        'SELECT job_id, queue, state, version, attempt, due_at, dispatched_at, finished_at FROM job WHERE job_id = $1',
        [jobId],
      );
      const attempts = await pool.query(
        'SELECT attempt, worker_id, outcome, failure_class, error, started_at, ended_at FROM attempt_history WHERE job_id = $1 ORDER BY started_at',
        [jobId],
      );
      await pool.end();
      if (job.rowCount === 0) {
        console.error(`no job ${jobId}`);
        process.exit(1);
      }
      console.log(JSON.stringify({ ...job.rows[0], attempts: attempts.rows }, null, 2));
      return;
    }
    case 'preview': {
      const from = flag('--from');
      const skipped = flag('--dst-skipped') ?? 'SHIFT';
      const repeated = flag('--dst-repeated') ?? 'FIRST';
      const [rule, timeZone, n] = args;
      const shape =
        'preview <cron|every:MS> <timeZone> [n] [--from INSTANT] [--dst-skipped SHIFT|SKIP] [--dst-repeated FIRST|LAST|BOTH]';
      if (!rule || !timeZone) usage(shape);
      if (skipped !== 'SHIFT' && skipped !== 'SKIP') usage(`--dst-skipped must be SHIFT or SKIP; ${shape}`);
      if (repeated !== 'FIRST' && repeated !== 'LAST' && repeated !== 'BOTH')
        usage(`--dst-repeated must be FIRST, LAST or BOTH; ${shape}`);
      const count = Number(n ?? 10);
      if (!Number.isSafeInteger(count) || count < 1 || count > 1000) usage(`n must be 1..1000; ${shape}`);
      const every = rule.startsWith('every:') ? Number(rule.slice(6)) : null;
      for (const line of preview(
        {
          cron: every === null ? rule : null,
          intervalMs: every,
          timeZone,
          startAtMs: null,
          endAtMs: null,
          dstSkipped: skipped,
          dstRepeated: repeated,
        },
        from === undefined ? Date.now() : instant(from, '--from'),
        count,
      )) {
        console.log(`${line.utc}  ${line.local}  ${line.dst}`);
      }
      return;
    }
    case 'dlq-replay': {
      const caller = flag('--caller');
      const reason = flag('--reason') ?? '';
      const rate = Number(flag('--rate') ?? 10);
      const tenantId = flag('--tenant') ?? 'default';
      const followAt = args.indexOf('--follow');
      if (followAt >= 0) args.splice(followAt, 1);
      if (!caller || args.length === 0)
        usage('dlq-replay --caller ID --reason TEXT [--tenant ID] [--rate N] [--follow] <jobId…>');
      if (!(rate > 0)) usage('--rate must be a positive number of jobs per second');
      const pool = createPool({ databaseUrl, schema: env.SCHED_DB_SCHEMA ?? 'public', max: 2 });
      const permissions = (env.SCHED_CLI_PERMISSIONS ?? '').split(',').filter(Boolean);
      const res = await replayDeadLetters(pool, registryPayloadValidator(pool, registryUrl), {
        caller: { id: caller, tenantId, permissions },
        jobIds: args,
        reason,
        ratePerSec: rate,
      });
      console.log(JSON.stringify(res, null, 2));
      try {
        // --follow: a bar on stderr while the scheduler releases them at the rate (each leaves SCHEDULED).
        if (followAt >= 0 && res.replayed.length > 0)
          await followProgress(
            res.replayed.length,
            async () =>
              (
                await pool.query<{ n: number }>(
                  "SELECT count(*)::int AS n FROM job WHERE job_id = ANY($1::text[]) AND state <> 'SCHEDULED'",
                  [res.replayed],
                )
              ).rows[0]!.n,
            { unit: 'released' },
          );
      } finally {
        await pool.end();
      }
      return;
    }
    case 'region': {
      const caller = flag('--caller');
      const reason = flag('--reason') ?? '';
      const [sub, region] = args;
      if (sub !== 'show' && sub !== 'promote')
        usage('region show | region promote <region> --caller ID --reason TEXT');
      const pool = createPool({ databaseUrl, schema: env.SCHED_DB_SCHEMA ?? 'public', max: 2 });
      try {
        if (sub === 'show') {
          console.log(JSON.stringify((await homeRegion(pool)) ?? { region: null }));
          return;
        }
        if (!region || !caller || reason.trim() === '')
          usage('region promote <region> --caller ID --reason TEXT');
        const permissions = (env.SCHED_CLI_PERMISSIONS ?? '').split(',').filter(Boolean);
        console.log(
          JSON.stringify(await regionPromote(pool, region, { actor: caller, reason, permissions })),
        );
      } finally {
        await pool.end();
      }
      return;
    }
    case 'workers': {
      if (args.length > 0) usage('workers');
      const pool = createPool({ databaseUrl, schema: env.SCHED_DB_SCHEMA ?? 'public', max: 1 });
      try {
        const iso = (ms: number) => new Date(ms).toISOString();
        const rows = (await workerList(pool)).map((w) => ({
          workerId: w.workerId,
          alive: w.alive,
          running: w.running,
          startedAt: iso(w.startedAtMs),
          lastBeatAt: iso(w.beatAtMs),
          aliveUntil: iso(w.aliveUntilMs),
          incarnation: w.incarnation,
        }));
        console.log(JSON.stringify(rows, null, 2));
      } finally {
        await pool.end();
      }
      return;
    }
    case 'demo':
    case 'stack': {
      const script = command === 'demo' ? 'apps/cli/src/demo.ts' : 'deploy/local/src/cli.ts';
      const root = fileURLToPath(new URL('../../../', import.meta.url));
      const r = spawnSync(process.execPath, ['--import', 'tsx', script, ...args], {
        cwd: root,
        stdio: 'inherit',
      });
      process.exit(r.status ?? 1);
    }

    default:
      if (command && API_COMMANDS.has(command))
        process.exit(
          await runApiCommand(command, {
            args,
            env,
            usage,
            instant,
            print: (v) => console.log(JSON.stringify(v, null, 2)),
          }),
        );
      usage(command ? `unknown command "${command}"` : 'no command');
  }
}

main().catch((err: unknown) => {
  const e = err as { code?: string; message?: string };
  console.error(`sched: ${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}`);
  process.exit(1);
});
