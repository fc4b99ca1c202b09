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
import { apiConfig } from './config.js';

const config = apiConfig(process.env);
const log = createLogger('api', { level: config.logLevel });

async function main(): Promise<void> {
  const { host, port, registryUrl } = config;
  const pool = createPool({
    databaseUrl: config.databaseUrl,
    schema: config.schema,
    max: 8,
    applicationName: 'sched-api',
    onIdleError: (err) => log.warn({ err }, 'an idle Postgres connection failed; it is replaced'),
  });
  const contracts = new Contracts({ registryUrl });
  await contracts.registerAll();
  const producer = await kafkajsPort({
    clientId: 'sched-api',
    brokers: config.brokers,
    logger: log,
  }).producer();
  const app = buildApp({
    producer,
    contracts,
    pool,
    commandsTopic: config.commandsTopic,
    callers: parseApiKeys(config.apiKeys),
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

main().catch((err: unknown) => {
  log.fatal({ err }, 'api failed to start');
  process.exit(1);
});
