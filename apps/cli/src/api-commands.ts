/**
 * The CLI's commands that go through the HTTP API, with a real credential: SCHED_API_KEY (a key
 * the API issued, or a bootstrap key of SCHED_API_KEYS) against SCHED_API_URL (default
 * http://127.0.0.1:3000). The API authenticates and authorises each of them as it does any caller.
 *
 *   tenant create <id> [--max-pending N] [--rate R] [--burst B]   create a tenant or set its quotas (admin)
 *   tenant show <id> | tenant list                                 a tenant, its quotas and pending jobs
 *   tenant key <id> --caller NAME [--permissions a,b]              issue a key (printed once) (admin)
 *   tenant keys <id> | tenant revoke <id> <keyId>                  its keys; revoke one (admin)
 *   tenant disable <id> | tenant enable <id>                       (admin)
 *   queue create <name> [--rate R] | queue show <name> | queue list a queue and its dispatch rate
 *   queue pause <name> | queue resume <name>                       stop / restart its dispatch (admin)
 *   job create <queue> <dueAt> [payload-json] [--job-id ID] [--wait 10s]
 *   job cancel <jobId> [--wait 10s] | job reschedule <jobId> <dueAt> [--wait 10s] | job show <jobId>
 *   command <commandId> [--wait 10s]                                what became of a command
 *
 * `--wait` holds until the scheduler has decided on the command and prints its status; the exit
 * code is then 0 for applied, 3 for no-op, 4 for rejected, 5 if still pending.
 */

export interface ApiCliDeps {
  args: string[];
  env: NodeJS.ProcessEnv;
  usage(message: string): never;
  instant(v: string | undefined, what: string): number;
  print(v: unknown): void;
}

class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    const e = (body as { error?: { code?: string; message?: string } }).error;
    super(`${status} ${e?.code ?? ''}: ${e?.message ?? JSON.stringify(body)}`);
    this.name = 'ApiCallError';
  }
}

export const API_COMMANDS = new Set(['tenant', 'queue', 'job', 'schedule', 'command']);

export async function runApiCommand(command: string, d: ApiCliDeps): Promise<number> {
  const base = (d.env.SCHED_API_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
  const key = d.env.SCHED_API_KEY;
  if (!key)
    d.usage('SCHED_API_KEY is required: a key issued by the API (`sched tenant key`) or a bootstrap one');
  // Flags first (`--name value`, anywhere), then the positional words.
  const flags = new Map<string, string>();
  const args: string[] = [];
  for (let i = 0; i < d.args.length; i++) {
    const w = d.args[i]!;
    if (w.startsWith('--')) {
      const v = d.args[i + 1];
      if (v === undefined) d.usage(`${w} needs a value`);
      flags.set(w, v);
      i++;
    } else args.push(w);
  }
  const flag = (name: string): string | undefined => flags.get(name);
  const num = (name: string): number | null => {
    const v = flag(name);
    if (v === undefined) return null;
    const n = Number(v);
    if (!Number.isFinite(n)) d.usage(`${name} must be a number`);
    return n;
  };
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const out: unknown = await res.json().catch(() => ({}));
    if (res.status >= 400) throw new ApiCallError(res.status, out);
    return out;
  };
  const enc = encodeURIComponent;
  const show = async (answer: Promise<unknown>): Promise<number> => {
    d.print(await answer);
    return 0;
  };
  /** Prints the answer; with --wait, the command's status once decided, and its exit code. */
  const sent = async (answer: unknown, wait: string | undefined): Promise<number> => {
    if (wait === undefined) {
      d.print(answer);
      return 0;
    }
    const { commandId } = answer as { commandId: string };
    const st = (await call('GET', `/v1/commands/${enc(commandId)}?wait=${enc(wait)}`)) as { status: string };
    d.print({ ...(answer as object), command: st });
    return { applied: 0, 'no-op': 3, rejected: 4, pending: 5 }[st.status] ?? 1;
  };

  try {
    const [sub, a, b, c] = args;
    switch (command) {
      case 'tenant': {
        if (sub === 'list') return show(call('GET', '/v1/tenants'));
        if (!a) d.usage('tenant <create|show|key|keys|revoke|disable|enable> <id> …');
        switch (sub) {
          case 'create': {
            const quotas = {
              maxPendingJobs: num('--max-pending'),
              commandsPerSecond: num('--rate'),
              commandBurst: num('--burst'),
            };
            return show(call('PUT', `/v1/tenants/${enc(a)}`, quotas));
          }
          case 'show':
            return show(call('GET', `/v1/tenants/${enc(a)}`));
          case 'key': {
            const callerId = flag('--caller');
            if (!callerId) d.usage('tenant key <id> --caller NAME [--permissions a,b]');
            const permissions = (flag('--permissions') ?? '').split(',').filter(Boolean);
            return show(call('POST', `/v1/tenants/${enc(a)}/keys`, { callerId, permissions }));
          }
          case 'keys':
            return show(call('GET', `/v1/tenants/${enc(a)}/keys`));
          case 'revoke':
            if (!b) d.usage('tenant revoke <id> <keyId>');
            return show(call('DELETE', `/v1/tenants/${enc(a)}/keys/${enc(b)}`));
          case 'disable':
          case 'enable':
            return show(call('POST', `/v1/tenants/${enc(a)}/${sub}`));
          default:
            return d.usage(`unknown tenant command "${sub ?? ''}"`);
        }
      }
      case 'queue': {
        if (sub === 'list') return show(call('GET', '/v1/queues'));
        if (!a) d.usage('queue <create|show|pause|resume|list> <name> [--rate R]');
        switch (sub) {
          case 'show':
            return show(call('GET', `/v1/queues/${enc(a)}`));
          case 'create':
            return show(call('PUT', `/v1/queues/${enc(a)}`, { maxDispatchPerSecond: num('--rate') }));
          case 'pause':
          case 'resume':
            return show(call('POST', `/v1/queues/${enc(a)}/${sub}`));
          default:
            return d.usage(`unknown queue command "${sub ?? ''}"`);
        }
      }
      case 'job': {
        const wait = flag('--wait');
        const jobId = flag('--job-id');
        if (sub === 'create') {
          if (!a) d.usage('job create <queue> <dueAt> [payload-json] [--job-id ID] [--wait 10s]');
          const payload: unknown = c === undefined ? null : JSON.parse(c);
          const body = { queue: a, dueAt: d.instant(b, 'dueAt'), payload, ...(jobId ? { jobId } : {}) };
          return await sent(await call('POST', '/v1/jobs', body), wait);
        }
        if (sub === 'list') {
          const params = new URLSearchParams();
          for (const name of ['state', 'queue', 'due-from', 'due-to', 'business-key', 'limit', 'cursor']) {
            const v = flag(`--${name}`);
            if (v !== undefined)
              params.set(
                name.replace(/-([a-z])/g, (_m, ch: string) => ch.toUpperCase()),
                v,
              );
          }
          return show(call('GET', `/v1/jobs?${params.toString()}`));
        }
        if (!a) d.usage('job <create|cancel|reschedule|show|list> …');
        if (sub === 'cancel') return await sent(await call('DELETE', `/v1/jobs/${enc(a)}`), wait);
        if (sub === 'reschedule')
          return await sent(
            await call('POST', `/v1/jobs/${enc(a)}/reschedule`, { dueAt: d.instant(b, 'dueAt') }),
            wait,
          );
        if (sub === 'show') return show(call('GET', `/v1/jobs/${enc(a)}`));
        return d.usage(`unknown job command "${sub ?? ''}"`);
      }
      case 'schedule': {
        if (sub === 'list') {
          const params = new URLSearchParams();
          for (const name of ['state', 'queue', 'limit', 'cursor']) {
            const v = flag(`--${name}`);
            if (v !== undefined) params.set(name, v);
          }
          return show(call('GET', `/v1/schedules?${params.toString()}`));
        }
        if (sub === 'show' && a) return show(call('GET', `/v1/schedules/${enc(a)}`));
        return d.usage(
          'schedule list [--state S] [--queue Q] [--limit N] [--cursor C] | schedule show <scheduleId>',
        );
      }
      case 'command': {
        const wait = flag('--wait') ?? '0';
        if (!sub) d.usage('command <commandId> [--wait 10s]');
        return await sent({ commandId: sub }, wait);
      }
      default:
        return d.usage(`unknown command "${command}"`);
    }
  } catch (err) {
    if (!(err instanceof ApiCallError)) throw err;
    process.stderr.write(`sched: ${err.message}\n`);
    return 1;
  }
}
