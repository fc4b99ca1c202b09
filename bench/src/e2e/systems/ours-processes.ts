import { stackEndpoints, stackStatus } from '@sched/local-stack';
import { startChild, e2ePath, type Child } from '../child-process.js';
import type { StartHub } from '../start-log.js';

/*
 * Our scheduler and worker as child processes of the bench, on the stack's endpoints, in the
 * session's schema and topics.
 */

/**
 * Development overrides, recorded in the report's knobs when set: `E2E_OURS_SCHEDULER_ENV` and
 * `E2E_OURS_WORKER_ENV` as `NAME=value,NAME=value` (e.g. `SCHED_WORKER_CONCURRENCY=128`).
 */
export function overrides(name: 'E2E_OURS_SCHEDULER_ENV' | 'E2E_OURS_WORKER_ENV'): Record<string, string> {
  const raw = process.env[name];
  if (!raw) return {};
  return Object.fromEntries(
    raw.split(',').map((kv) => {
      const at = kv.indexOf('=');
      if (at <= 0) throw new Error(`${name}: "${kv}" is not NAME=value`);
      return [kv.slice(0, at).trim(), kv.slice(at + 1).trim()];
    }),
  );
}

function baseEnv(schema: string, topic: string): Record<string, string> {
  const ep = stackEndpoints();
  return {
    DATABASE_URL: ep.databaseUrl,
    KAFKA_BROKERS: ep.kafkaBrokers.join(','),
    SCHED_REGISTRY_URL: ep.registryUrl,
    SCHED_DB_SCHEMA: schema,
    SCHED_COMMANDS_TOPIC: topic,
  };
}

export function startScheduler(hub: StartHub, schema: string, topic: string, n: number): Promise<Child> {
  return startChild({
    name: 'scheduler',
    entry: 'apps/scheduler/src/main.ts',
    marker: 'SCHEDULER_READY',
    onStarts: hub.onStarts,
    // The pending workload reads the live heap after a forced collection (POST /debug/gc).
    // E2E_OURS_SCHEDULER_NODE_FLAGS (space-separated, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`)
    // adds Node flags NODE_OPTIONS refuses; a development override like the env ones.
    nodeFlags: [
      '--expose-gc',
      ...(process.env.E2E_OURS_SCHEDULER_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    ],
    env: {
      ...baseEnv(schema, topic),
      SCHED_GROUP_ID: `${schema}-sched`,
      SCHED_OWNER_ID: `${schema}-owner-${n}`,
      SCHED_METRICS_PORT: '0',
      ...overrides('E2E_OURS_SCHEDULER_ENV'),
    },
  });
}

/**
 * `E2E_OURS_HOLD_WORKER_MS`: a development override that stops (SIGSTOP) each session's worker for
 * that long once it is ready, then lets it go on (SIGCONT), so that on a shared host a workload's
 * `due→on kafka` evidence shows the dispatch path (claim, outbox, Debezium, Kafka) without the
 * worker's competition for the same cores. Its start figures then measure the hold, not the system.
 * Returns what lets the worker go early (idempotent); 0 or unset holds nothing.
 */
export function holdWorker(worker: Child): () => void {
  const ms = holdWorkerMs(process.env.E2E_OURS_HOLD_WORKER_MS);
  if (ms === 0) return () => undefined;
  worker.child.kill('SIGSTOP');
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    clearTimeout(timer);
    worker.child.kill('SIGCONT');
  };
  const timer = setTimeout(release, ms);
  return release;
}

/** `E2E_OURS_HOLD_WORKER_MS` as milliseconds: 0 when unset or empty; a bad value is refused. */
export function holdWorkerMs(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 0;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 0 || ms > 600_000)
    throw new Error(
      `E2E_OURS_HOLD_WORKER_MS: "${raw}" is not a whole number of milliseconds from 0 to 600000`,
    );
  return ms;
}

export const holdKnob = (): Record<string, string> =>
  process.env.E2E_OURS_HOLD_WORKER_MS
    ? { 'worker held after start ms': process.env.E2E_OURS_HOLD_WORKER_MS }
    : {};

export const prefixed = (p: string, o: Record<string, string>) =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [`${p}${k}`, v]));

export function startWorker(
  hub: StartHub,
  schema: string,
  topic: string,
  queue: string,
  n: number,
): Promise<Child> {
  return startChild({
    name: 'worker',
    entry: 'apps/worker/src/main.ts',
    marker: 'WORKER_READY',
    onStarts: hub.onStarts,
    // E2E_OURS_WORKER_NODE_FLAGS: as the scheduler's (e.g. `--trace-gc`, with E2E_LOG_DIR to keep it).
    nodeFlags: (process.env.E2E_OURS_WORKER_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    env: {
      ...baseEnv(schema, topic),
      SCHED_WORKER_GROUP_ID: `${schema}-workers`,
      SCHED_WORKER_ID: `${schema}-worker-${n}`,
      SCHED_WORKER_METRICS_PORT: '0',
      SCHED_WORKER_HANDLERS: e2ePath('./workers/ours-handlers.ts'),
      E2E_QUEUE: queue,
      ...overrides('E2E_OURS_WORKER_ENV'),
    },
  });
}

/** The stack's service processes as CPU groups (root pids, see `cpuWindow`): Postgres, Kafka, Connect. */
export async function stackProcessGroups(): Promise<Record<string, number[]>> {
  const s = await stackStatus();
  const pidOf = (name: string) => s.services.find((x) => x.name === name)?.pid;
  const groups: Record<string, number[]> = {};
  for (const [group, svc] of [
    ['postgres', 'postgres'],
    ['kafka', 'kafka'],
    ['connect+debezium', 'connect'],
  ] as const) {
    const pid = pidOf(svc);
    if (pid) groups[group] = [pid];
  }
  return groups;
}
