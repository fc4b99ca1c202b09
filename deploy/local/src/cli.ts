/**
 * `npm run stack -- <command>`: up | down [--keep-slot] | status [--json] | logs [service] [--lines N]
 * | restart <service> | endpoints | migrate. The composition root: the only place that reads
 * process.env and decides the exit code.
 */
import { existsSync } from 'node:fs';
import { migrate } from '@sched/store';
import { describeError } from './errors.js';
import { tailFile } from './log-files.js';
import { SERVICES, StackContext, serviceLog, type ServiceName } from './context.js';
import { stackSettings } from './settings.js';
import { ensureStackUp, restartService, stackDown, stackStatus } from './stack.js';
import { stackEndpoints } from './index.js';

const USAGE = `usage: npm run stack -- <command>
  up                      start every service (idempotent) and wait until all are healthy
  down [--drop-slot]      stop what up started; --drop-slot also drops the replication slot
  status [--json]         one line per service; exit 0 only if every service is healthy
  logs [service] [-n N]   last N (default 40) log lines of one service or all (${SERVICES.join(', ')}, maven)
  restart <service>       stop and start one service (${SERVICES.join(', ')})
  endpoints               print the endpoints as JSON (databaseUrl, kafkaBrokers, registryUrl, …)
  migrate                 apply the store's migrations to DATABASE_URL (or the stack's database)`;

function isService(x: string | undefined): x is ServiceName {
  return (SERVICES as readonly string[]).includes(x ?? '');
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const env = process.env;
  switch (command) {
    case 'up':
      await ensureStackUp({ env });
      return printStatus(false);
    case 'down':
      await stackDown({ env, dropSlot: rest.includes('--drop-slot') });
      return 0;
    case 'status':
      return printStatus(rest.includes('--json'));
    case 'logs': {
      const n = Number(rest[rest.findIndex((a) => a === '-n' || a === '--lines') + 1] ?? 40) || 40;
      const only = rest.find((a) => !a.startsWith('-') && Number.isNaN(Number(a)));
      const names = only ? [only] : [...SERVICES];
      const ctx = new StackContext(stackSettings(env), env, () => {});
      for (const name of names) {
        const path = isService(name) ? serviceLog(ctx, name) : `${ctx.s.stateDir}/logs/${name}.log`;
        if (!existsSync(path)) {
          process.stdout.write(`==> ${name}: no log at ${path}\n`);
          continue;
        }
        process.stdout.write(`==> ${path} <==\n${tailFile(path, n)}\n\n`);
      }
      return 0;
    }
    case 'restart': {
      const name = rest[0];
      if (!isService(name)) {
        process.stderr.write(`restart needs a service: ${SERVICES.join(', ')}\n`);
        return 2;
      }
      await restartService(name, { env });
      return 0;
    }
    case 'endpoints':
      process.stdout.write(`${JSON.stringify(stackEndpoints(env), null, 2)}\n`);
      return 0;
    case 'migrate': {
      const r = await migrate(stackEndpoints(env).databaseUrl);
      process.stdout.write(
        `migrations ${r.applied.length ? `applied: ${r.applied.join(', ')}` : 'up to date'}\n`,
      );
      return 0;
    }
    default:
      process.stderr.write(`${USAGE}\n`);
      return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
  }
}

async function printStatus(json: boolean): Promise<number> {
  const st = await stackStatus({ env: process.env });
  if (json) {
    process.stdout.write(`${JSON.stringify(st, null, 2)}\n`);
  } else {
    for (const s of st.services) {
      const pid = s.external ? 'external' : s.pid ? `pid ${s.pid}` : '-';
      process.stdout.write(
        `${s.name.padEnd(9)} ${(s.healthy ? 'healthy' : 'DOWN').padEnd(8)} ${pid.padEnd(10)} 127.0.0.1:${String(s.port).padEnd(6)} ${s.detail}\n`,
      );
    }
  }
  return st.healthy ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`[stack] error: ${describeError(err)}\n`);
    process.exit(1);
  },
);
