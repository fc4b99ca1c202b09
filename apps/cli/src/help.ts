/** The CLI's help: `sched --help`, `sched help [command]`, `sched <command> --help`. */

const OVERVIEW = `sched: the scheduler's command line.

Through the HTTP API (a tenant's commands; SCHED_API_URL, default http://127.0.0.1:3000, and
SCHED_API_KEY, a key the API issued or a bootstrap one):
  tenant    create, show, list, key, keys, revoke, disable, enable
  queue     create, show, list, pause, resume
  job       create, cancel, reschedule, show, list   (--wait 10s: wait for the scheduler's decision)
  schedule  list, show
  command   <commandId> [--wait 10s]           what became of a command

Operator commands (Postgres and Kafka directly, with the credentials given: DATABASE_URL,
KAFKA_BROKERS, SCHED_REGISTRY_URL, SCHED_COMMANDS_TOPIC; SCHED_TENANT, SCHED_CLI_PERMISSIONS):
  submit | cancel | reschedule   produce a job command to the command topic
  inspect <jobId>                state, version, attempts
  preview <cron|every:MS> <timeZone> [n] [--from T] [--dst-skipped P] [--dst-repeated P]
  dlq-replay                     governed replay of one tenant's dead letters
  region show | region promote   the home region
  workers                        every worker process's liveness row
  demo [--once]                  the platform with a demo workload
  stack <up|down|status|logs|restart>

Exit codes: 0 ok (with --wait: applied), 1 failed or an error answer, 2 bad usage,
3 no-op, 4 rejected, 5 still pending (--wait).
'sched help <command>' or 'sched <command> --help' for one command.
`;

const COMMANDS: Record<string, string> = {
  tenant: `sched tenant create <id> [--max-pending N] [--rate R] [--burst B]   create a tenant or set its quotas (admin)
sched tenant show <id>                                            the tenant, its quotas and pending jobs
sched tenant list                                                 every tenant (admin)
sched tenant key <id> --caller NAME [--permissions a,b]           issue a key, printed once (admin)
sched tenant keys <id>                                            its keys, never the keys themselves (admin)
sched tenant revoke <id> <keyId>                                  refused everywhere within 5 s (admin)
sched tenant disable <id> | sched tenant enable <id>              (admin)`,
  queue: `sched queue create <name> [--rate R]   create a queue or set its fleet-wide dispatch rate (admin)
sched queue show <name> | sched queue list
sched queue pause <name> | sched queue resume <name>   no dispatch while paused; due jobs wait (admin)`,
  job: `sched job create <queue> <dueAt> [payload-json] [--job-id ID] [--wait 10s]
sched job cancel <jobId> [--wait 10s]
sched job reschedule <jobId> <dueAt> [--wait 10s]
sched job show <jobId>
sched job list [--state S] [--queue Q] [--due-from T] [--due-to T] [--business-key K] [--limit N] [--cursor C]
dueAt: ISO-8601 with an offset (2026-12-31T09:00:00+01:00) or ms since the epoch.
--wait: exit 0 applied, 3 no-op, 4 rejected, 5 still pending.`,
  schedule: `sched schedule list [--state S] [--queue Q] [--limit N] [--cursor C]   the tenant's schedules, a page at a time
sched schedule show <scheduleId>   its rule, policies, runs and next fire time`,
  command: `sched command <commandId> [--wait 10s]   pending, applied, no-op (with why) or rejected (with the reason)`,
  submit: `sched submit <queue> <dueAt> [payload-json] [--job-id ID]   produce a CreateJob (tenant SCHED_TENANT)
checked with the scheduler's rules first: one it would reject exits 2 with its reason, nothing sent`,
  cancel: `sched cancel <jobId>   produce a CancelJob`,
  reschedule: `sched reschedule <jobId> <dueAt>   produce a RescheduleJob`,
  inspect: `sched inspect <jobId>   state, version and attempts, from Postgres`,
  preview: `sched preview '<cron>'|every:<ms> <timeZone> [n] [--from INSTANT] [--dst-skipped SHIFT|SKIP] [--dst-repeated FIRST|LAST|BOTH]
the next n (default 10) fire times from now or --from, in UTC and local time, DST marked, under the DST policies given`,
  'dlq-replay': `sched dlq-replay --caller ID --reason TEXT [--tenant ID] [--rate N] [--follow] <jobId…>
needs dlq:replay in SCHED_CLI_PERMISSIONS; one tenant's dead letters (default \`default\`), released at
--rate per second (default 10); --follow shows a bar (count, rate, ETA) on stderr until all are released`,
  region: `sched region show
sched region promote <region> --caller ID --reason TEXT   needs region:promote; fences every owner at once`,
  workers: `sched workers   every worker process: alive or gone, since when, the RUNNING jobs it holds`,
  demo: `sched demo [--once] [--jobs N]   the stack, scheduler, worker and API with a demo workload`,
  stack: `sched stack <up|down|status|logs|restart>   the local stack (Kafka, Connect, registry, Postgres)`,
};

/** The help asked for by the arguments, or undefined when they ask for none. */
export function helpFor(command: string | undefined, args: readonly string[]): string | undefined {
  if (command === undefined || command === '--help' || command === '-h') return OVERVIEW;
  if (command === 'help') return args[0] ? (COMMANDS[args[0]] ?? OVERVIEW) : OVERVIEW;
  if (args.includes('--help') || args.includes('-h')) return COMMANDS[command] ?? OVERVIEW;
  return undefined;
}
