/**
 * API composition root: reads the environment, wires Kafka, Postgres and the registry, and
 * listens on SCHED_API_HOST:SCHED_API_PORT (default 127.0.0.1:3000).
 *
 * SCHED_API_KEYS="key1=alice@ops:tenantA:dlq:replay|dlq:replay-quarantined,key2=bob:default:"
 * (comma-separated `key=callerId:tenantId:permission|permission`); when unset every request is
 * the anonymous caller of tenant `default` with no permissions.
 */
import { Contracts } from '@sched/contracts';
import { registryPayloadValidator } from '@sched/dead-letters';
import { kafkajsPort } from '@sched/kafka';
import { createLogger } from '@sched/logging';
import { createRegistry } from '@sched/metrics';
import { createPool } from '@sched/store';
import { parseApiKeys } from './api-keys.js';
import { buildApp } from './app.js';

const env = process.env;
const log = createLogger('api', { level: env.LOG_LEVEL ?? 'info' });
const databaseUrl = env.DATABASE_URL ?? 'postgres://sched:sched@127.0.0.1:55432/sched';
const brokers = (env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
const registryUrl = env.SCHED_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7';
const host = env.SCHED_API_HOST ?? '127.0.0.1';
const port = Number(env.SCHED_API_PORT ?? 3000);

async function main(): Promise<void> {
  const pool = createPool({
    databaseUrl,
    schema: env.SCHED_DB_SCHEMA ?? 'public',
    max: 8,
    applicationName: 'sched-api',
  });
  const contracts = new Contracts({ registryUrl });
  await contracts.registerAll();
  const producer = await kafkajsPort({ clientId: 'sched-api', brokers, logger: log }).producer();
  const app = buildApp({
    producer,
    contracts,
    pool,
    commandsTopic: env.SCHED_COMMANDS_TOPIC ?? 'sched.commands',
    callers: parseApiKeys(env.SCHED_API_KEYS),
    payloadValidator: registryPayloadValidator(pool, registryUrl),
    metrics: createRegistry({ component: 'api' }),
    log,
  });
  await app.listen({ host, port });
  log.info({ host, port }, 'api listening');
  process.stdout.write(`API_READY ${JSON.stringify({ host, port })}\n`);
  const stop = async () => {
    await app.close();
    await producer.disconnect();
    await pool.end();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    log.fatal({ err }, 'api failed to start');
    process.exit(1);
  });
}
