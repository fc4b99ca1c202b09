/**
 * Worker composition root. Loads the user's handlers from the module named by
 * SCHED_WORKER_HANDLERS (default: the built-in demo handlers), which exports
 * `register(worker, { pool, log })` and calls `worker.handle(queue, fn)` for each queue.
 */
import { hostname } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { fromEnv } from '@sched/config';
import { createLogger, startupStep, type Logger } from '@sched/logging';
import { serveMetrics, watchEventLoop } from '@sched/metrics';
import {
  createWorker,
  fairnessFromEnv,
  workerConfig,
  type Worker,
  type WorkerOptions,
} from '@sched/worker-sdk';
import type pg from 'pg';

const env = process.env;
const config = workerConfig({
  workerId: `${hostname()}-${process.pid}`,
  ...fromEnv<WorkerOptions>('worker', env, {
    workerId: { env: 'SCHED_WORKER_ID', kind: 'string' },
    groupId: { env: 'SCHED_WORKER_GROUP_ID', kind: 'string' },
    commandsTopic: { env: 'SCHED_COMMANDS_TOPIC', kind: 'string' },
    leaseTtlMs: { env: 'SCHED_LEASE_TTL_MS', kind: 'int' },
    heartbeatEveryMs: { env: 'SCHED_HEARTBEAT_EVERY_MS', kind: 'int' },
    livenessTtlMs: { env: 'SCHED_WORKER_LIVENESS_TTL_MS', kind: 'int' },
    livenessEveryMs: { env: 'SCHED_WORKER_LIVENESS_EVERY_MS', kind: 'int' },
    executionTimeoutMs: { env: 'SCHED_EXECUTION_TIMEOUT_MS', kind: 'int' },
    abandonAfterTimeoutMs: { env: 'SCHED_WORKER_ABANDON_AFTER_TIMEOUT_MS', kind: 'int' },
    concurrency: { env: 'SCHED_WORKER_CONCURRENCY', kind: 'int' },
    dbBatchMax: { env: 'SCHED_WORKER_DB_BATCH_MAX', kind: 'int' },
    completionLingerMs: { env: 'SCHED_WORKER_COMPLETION_LINGER_MS', kind: 'int' },
    sessionTimeoutMs: { env: 'SCHED_WORKER_SESSION_TIMEOUT_MS', kind: 'int' },
    commitIntervalMs: { env: 'SCHED_WORKER_COMMIT_INTERVAL_MS', kind: 'int' },
    fetchMaxBytesPerPartition: { env: 'SCHED_WORKER_FETCH_MAX_BYTES', kind: 'int' },
    poisonAfterReplays: { env: 'SCHED_POISON_AFTER_REPLAYS', kind: 'int' },
    lifecycleEvents: { env: 'SCHED_WORKER_LIFECYCLE_EVENTS', kind: 'string' },
  }),
  ...fairnessFromEnv(env),
});
const log = createLogger('worker', { level: env.LOG_LEVEL ?? 'info', bindings: { worker: config.workerId } });
const databaseUrl = env.DATABASE_URL ?? 'postgres://sched:sched@127.0.0.1:55432/sched';
const schema = env.SCHED_DB_SCHEMA ?? 'public';
const brokers = (env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
const registryUrl = env.SCHED_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7';
const metricsPort = Number(env.SCHED_WORKER_METRICS_PORT ?? 9465);
// Beside this module: demo-handlers.ts under tsx, the built demo-handlers.js under node (dist/).
const handlersPath =
  env.SCHED_WORKER_HANDLERS ??
  fileURLToPath(
    new URL(`./demo-handlers${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
  );

export interface HandlerModule {
  register(
    worker: Worker,
    deps: { pool: pg.Pool; log: Logger; env: Record<string, string | undefined> },
  ): void | Promise<void>;
}

async function main(): Promise<void> {
  const running = await startupStep(log, 'schema registry', () =>
    createWorker({ brokers, registryUrl, databaseUrl, schema, logger: log }, config),
  );
  const { worker, pool, metrics } = running;
  const mod = (await import(pathToFileURL(resolve(handlersPath)).href)) as HandlerModule;
  if (typeof mod.register !== 'function')
    throw new Error(`${handlersPath} must export register(worker, deps)`);
  await mod.register(worker, { pool, log, env });
  const { server, port } = await serveMetrics(metrics.registry, metricsPort);
  // A handler that blocks the loop delays every other job of this process: say so.
  const loop = watchEventLoop(metrics.registry, 'sched_worker_event_loop_delay_max_seconds', {
    stallMs: 200,
    onStall: (delayMs) => log.warn({ delayMs }, 'event loop stalled: a handler or GC blocked every job here'),
  });
  await startupStep(log, 'kafka (connect, group join)', () => worker.start());
  log.info({ metricsPort: port, handlers: handlersPath }, 'worker started');
  process.stdout.write(`WORKER_READY ${JSON.stringify({ ownerId: config.workerId, metricsPort: port })}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    await running.close();
    loop.stop();
    server.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  log.fatal({ err }, 'worker failed to start');
  process.exit(1);
});
