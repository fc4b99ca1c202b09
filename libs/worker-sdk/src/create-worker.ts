import { hostname } from 'node:os';
import type pg from 'pg';
import { Contracts } from '@sched/contracts';
import { kafkajsPort, type KafkaPort } from '@sched/kafka';
import { createLogger, type Logger } from '@sched/logging';
import { createPool } from '@sched/store';
import { avroWorkerCodec } from './avro-codec.js';
import { workerConfig, type WorkerOptions } from './config.js';
import { Worker } from './worker.js';
import { createWorkerMetrics, type WorkerMetrics } from './worker-metrics.js';

export interface WorkerConnection {
  /** Kafka bootstrap servers. */
  brokers: string[];
  /** The schema registry (Confluent API). */
  registryUrl: string;
  /** The platform's Postgres: leases, attempts and completions are fenced statements there. */
  databaseUrl: string;
  /** Postgres schema of the platform's tables; default `public`. */
  schema?: string;
  /** Default: JSON lines on stdout at `info`. */
  logger?: Logger;
  /** Another Kafka adapter behind our port (default: kafkajs). */
  kafka?: KafkaPort;
}

/** A worker with its connections: register handlers with `handle`, then `start`; `close` ends all. */
export interface RunningWorker {
  readonly worker: Worker;
  readonly pool: pg.Pool;
  readonly metrics: WorkerMetrics;
  handle: Worker['handle'];
  start(): Promise<void>;
  /** Stops consuming, lets running handlers finish (or abandons them past their timeout), closes the pools. */
  close(): Promise<void>;
}

/**
 * The worker of a user's own service, wired as `apps/worker` wires it: a job pool and a one-connection
 * liveness pool, the Avro contracts registered, metrics, the Kafka port. Options not given take the
 * SDK's defaults (`workerDefaults`); `workerId` defaults to `<host>-<pid>`.
 */
export async function createWorker(
  connection: WorkerConnection,
  options: Partial<WorkerOptions> = {},
): Promise<RunningWorker> {
  const config = workerConfig({ workerId: `${hostname()}-${process.pid}`, ...options });
  const log = connection.logger ?? createLogger('worker', { bindings: { worker: config.workerId } });
  const pool = createPool({
    databaseUrl: connection.databaseUrl,
    schema: connection.schema,
    max: Math.min(32, config.concurrency + 4),
    applicationName: 'sched-worker',
    onIdleError: (err) => log.warn({ err }, 'an idle Postgres connection failed; it is replaced'),
  });
  // The liveness beats on a connection of their own: never queued behind job statements.
  const livenessPool = createPool({
    databaseUrl: connection.databaseUrl,
    schema: connection.schema,
    max: 1,
    applicationName: 'sched-worker-liveness',
    onIdleError: (err) => log.warn({ err }, 'the liveness connection failed; it is replaced'),
  });
  const contracts = new Contracts({ registryUrl: connection.registryUrl });
  try {
    await contracts.registerAll();
  } catch (err) {
    await Promise.all([pool.end(), livenessPool.end()]);
    throw err;
  }
  const metrics = createWorkerMetrics(config.workerId);
  const worker = new Worker({
    config,
    kafka:
      connection.kafka ??
      kafkajsPort({ clientId: config.workerId, brokers: connection.brokers, logger: log }),
    pool,
    livenessPool,
    codec: avroWorkerCodec(contracts),
    metrics,
    log,
  });
  let closed = false;
  return {
    worker,
    pool,
    metrics,
    handle: worker.handle.bind(worker),
    start: () => worker.start(),
    async close() {
      if (closed) return;
      closed = true;
      await worker.stop();
      await Promise.all([pool.end(), livenessPool.end()]);
    },
  };
}
