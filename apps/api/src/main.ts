/**
 * API composition root: reads the environment, wires Kafka, Postgres and the registry, and
 * listens on SCHED_API_HOST:SCHED_API_PORT (default 127.0.0.1:3000).
 *
 * SCHED_API_KEYS="key1=alice@ops:tenantA:dlq:replay|dlq:replay-quarantined,sha256:<hex>=bob:default:"
 * (comma-separated `key=callerId:tenantId:permission|permission`, a key or its SHA-256 digest) is
 * required; SCHED_API_AUTH=off is development mode instead (every request the anonymous caller of
 * tenant `default`, without permissions), logged at start as a warning.
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
    auth: config.auth === 'off' ? 'off' : 'keys',
    payloadValidator: registryPayloadValidator(pool, registryUrl),
    metrics: createRegistry({ component: 'api' }),
    log,
  });
  if (config.auth === 'off')
    log.warn(
      { auth: 'off' },
      'SCHED_API_AUTH=off: DEVELOPMENT MODE, every request is served as tenant default without a key; never expose this API',
    );
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
