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
  standByForHomeRegion,
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
  const onIdleError = (err: Error) => log.warn({ err }, 'an idle Postgres connection failed; it is replaced');
  const pool = createPool({ databaseUrl, schema, max: 8, applicationName: 'sched-scheduler', onIdleError });
  // The firing rounds' own connections, one per round slot, kept open (see Claimer).
  const firePool = createPool({
    databaseUrl,
    schema,
    max: config.claimConcurrency,
    applicationName: 'sched-scheduler-fire',
    idleTimeoutMs: 0,
    onIdleError,
  });
  const contracts = new Contracts({ registryUrl });
  await startupStep(log, 'schema registry', () => contracts.registerAll());
  const metrics = createSchedulerMetrics(config.ownerId);
  const names = await knownNamesFromDb(pool);
  const kafka = kafkajsPort({ clientId: config.ownerId, brokers, logger: log });
  const { server, port } = await serveMetrics(metrics.registry, metricsPort);
  const loop = watchEventLoop(metrics.registry, 'sched_event_loop_delay_max_seconds', {
    stallMs: config.slowRoundMs,
    onStall: (delayMs) => log.warn({ delayMs }, 'event loop stalled: timers (and claims) ran this late'),
  });
  // A line on stdout that tests and scripts can wait for: running, or standing by for its region.
  let announced = false;
  const announce = () => {
    if (announced) return;
    announced = true;
    process.stdout.write(
      `SCHEDULER_READY ${JSON.stringify({ ownerId: config.ownerId, metricsPort: port })}\n`,
    );
  };

  let stopping = false;
  let onStop: () => void = () => {};
  const stopped = new Promise<void>((r) => (onStop = r));
  /** The scheduler of the current term, from its start until it has stopped. */
  let running: Scheduler | undefined;
  let loopDone: Promise<void> = Promise.resolve();
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    onStop();
    await loopDone;
    loop.stop();
    names.close();
    server.close();
    await pool.end();
    await firePool.end();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  // Runs while its region is home (or none is set); when another region is promoted, lets every
  // partition go, leaves the group and stands by until its region is home again. A stop signal
  // waits for a start under way, then stops that term's scheduler once.
  const terms = async (): Promise<void> => {
    while (!stopping) {
      await standByForHomeRegion(pool, {
        region: config.region,
        ownerId: config.ownerId,
        pollMs: 1_000,
        metrics,
        log,
        onStandBy: announce,
        stopping: () => stopping,
      });
      if (stopping) return;
      const scheduler = new Scheduler({
        config,
        pool,
        firePool,
        kafka,
        codec: avroSchedulerCodec(contracts),
        names,
        metrics,
        log,
        newIndex: wheelIndexFactory(),
      });
      const started = startupStep(log, 'kafka (connect, group join)', () => scheduler.start());
      running = scheduler;
      try {
        await started;
        log.info({ metricsPort: port, schema, brokers, region: config.region || null }, 'scheduler started');
        announce();
        await Promise.race([scheduler.demoted, stopped]);
      } finally {
        await scheduler.stop();
        running = undefined;
      }
    }
  };
  loopDone = terms().catch((err: unknown) => {
    if (stopping) return log.warn({ err }, 'a start under way failed while stopping');
    log.fatal({ err, running: running !== undefined }, 'scheduler failed');
    process.exit(1);
  });
  await loopDone;
}

main().catch((err: unknown) => {
  log.fatal({ err }, 'scheduler failed to start');
  process.exit(1);
});
