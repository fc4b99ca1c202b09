/**
 * @sched/local-stack: the local stack (Postgres with logical WAL, Kafka in KRaft mode, Kafka
 * Connect with the Debezium outbox connector, Apicurio Registry with the Confluent API) as a
 * library, for tests, the demo and benchmarks. The CLI (`npm run stack -- up|down|status|logs|
 * restart`) is a thin shell over the same functions.
 */
import { endpointsOf, stackSettings, type Env, type StackEndpoints } from './settings.js';

export type { StackEndpoints, StackSettings, Env } from './settings.js';
export { stackSettings, DEFAULT_PORTS, PORT_ENV, STACK_DB } from './settings.js';
export {
  ensureStackUp,
  stackStatus,
  stackDown,
  startService,
  stopService,
  restartService,
  recordRouterRuntime,
} from './stack.js';
export type { StackOptions, StackStatus, DownOptions } from './stack.js';
export { SERVICES, SLOT_NAME } from './context.js';
export type { ServiceName, ServiceStatus } from './context.js';
export {
  STACK_TOPICS,
  DISPATCH_TOPIC_PREFIX,
  DISPATCH_PARTITIONS,
  dispatchTopic,
  ensureTopics,
} from './topics.js';
export type { TopicSpec } from './topics.js';
export {
  CONNECTOR_FILE,
  CONNECTOR_NAME,
  CONNECTOR_PLACEHOLDERS,
  connectorTemplate,
  connectorConfig,
} from './connector.js';
export type { ConnectorConfig } from './connector.js';
export { BROKER_SETTINGS } from './kafka-broker.js';
export { WORKER_SETTINGS } from './connect-worker.js';
export { recipeVersions, distributionDirs } from './distributions.js';
export { POLL_TIMER_AGENT_SOURCE, POLL_TIMER_PATCHED_LINE } from './poll-timer-agent.js';
export { logFile } from './processes.js';
export { StackError, type StackErrorCode } from './errors.js';

/**
 * Where the stack's services answer. `DATABASE_URL` overrides the database (then `up` starts no
 * Postgres of its own); ports follow SCHED_*_PORT. Pure: reads only `env`.
 */
export function stackEndpoints(env: Env = process.env): StackEndpoints {
  return endpointsOf(stackSettings(env));
}
