/**
 * Scheduler composition root: reads the environment (the only place that does), builds the
 * config, wires Postgres, Kafka, the schema registry and the metrics endpoint, and runs until
 * SIGINT/SIGTERM.
 */
import { hostname } from 'node:os';
import { fromEnv } from '@sched/config';
import { Contracts } from '@sched/contracts';
import { kafkajsPort } from '@sched/kafka';
import { createLogger, startupStep } from '@sched/logging';
import { serveMetrics, watchEventLoop } from '@sched/metrics';
import {
  avroSchedulerCodec,
  createSchedulerMetrics,
  knownNamesFromDb,
  Scheduler,
  schedulerConfig,
  schedulerEnv,
  wheelIndexFactory,
} from '@sched/scheduler';
import { createPool, migrate } from '@sched/store';

const env = process.env;
const config = schedulerConfig({
  ownerId: `${hostname()}-${process.pid}`,
  ...fromEnv('scheduler', env, schedulerEnv),
});
const log = createLogger('scheduler', {
  level: env.LOG_LEVEL ?? 'info',
  bindings: { owner: config.ownerId },
});
const databaseUrl = env.DATABASE_URL ?? 'postgres://sched:sched@127.0.0.1:55432/sched';
const schema = env.SCHED_DB_SCHEMA ?? 'public';
const brokers = (env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
const registryUrl = env.SCHED_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7';
const metricsPort = Number(env.SCHED_METRICS_PORT ?? 9464);

async function main(): Promise<void> {
  await startupStep(log, 'database migrations', () => migrate(databaseUrl, { schema }));
  const pool = createPool({ databaseUrl, schema, max: 8, applicationName: 'sched-scheduler' });
  const contracts = new Contracts({ registryUrl });
  await startupStep(log, 'schema registry', () => contracts.registerAll());
  const metrics = createSchedulerMetrics(config.ownerId);
  const names = await knownNamesFromDb(pool);
  const scheduler = new Scheduler({
    config,
    pool,
    kafka: kafkajsPort({ clientId: config.ownerId, brokers, logger: log }),
    codec: avroSchedulerCodec(contracts),
    names,
    metrics,
    log,
    newIndex: wheelIndexFactory(),
  });
  const { server, port } = await serveMetrics(metrics.registry, metricsPort);
  const loop = watchEventLoop(metrics.registry, 'sched_event_loop_delay_max_seconds', {
    stallMs: config.slowRoundMs,
    onStall: (delayMs) => log.warn({ delayMs }, 'event loop stalled: timers (and claims) ran this late'),
  });
  await startupStep(log, 'kafka (connect, group join)', () => scheduler.start());
  log.info({ metricsPort: port, schema, brokers }, 'scheduler started');
  // A line on stdout that tests and scripts can wait for.
  process.stdout.write(`SCHEDULER_READY ${JSON.stringify({ ownerId: config.ownerId, metricsPort: port })}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    await scheduler.stop();
    loop.stop();
    names.close();
    server.close();
    await pool.end();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  log.fatal({ err }, 'scheduler failed to start');
  process.exit(1);
});
