import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JVM_COMMON, renderProperties, writeLog4j } from './kafka-broker.js';
import { markerArgs, spawnDetached } from './processes.js';
import type { StackSettings } from './settings.js';

/**
 * One Kafka Connect worker in distributed mode (configs, offsets and status in Kafka topics,
 * replication factor 1), with the Debezium Postgres connector on its plugin path.
 */

/**
 * Worker settings that are not about this machine's paths and ports. docker-compose.yml gives
 * the Debezium image the same values (a test compares them).
 */
export const WORKER_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  'group.id': 'sched-connect',
  'config.storage.topic': 'sched-connect-configs',
  'offset.storage.topic': 'sched-connect-offsets',
  'status.storage.topic': 'sched-connect-status',
  'config.storage.replication.factor': '1',
  'offset.storage.replication.factor': '1',
  'status.storage.replication.factor': '1',
  'offset.storage.partitions': '5',
  'status.storage.partitions': '1',
  'key.converter': 'org.apache.kafka.connect.json.JsonConverter',
  'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
  // How often source offsets (for Debezium: the LSN it confirms to Postgres) are committed.
  // Lower means fewer duplicates after a crash and a slot that advances sooner.
  'offset.flush.interval.ms': '1000',
  // One worker: when it restarts, give its connector back at once (default waits up to 5 min).
  'scheduled.rebalance.max.delay.ms': '0',
  // Kafka 4 producers linger 5 ms by default; the connector overrides this again.
  'producer.linger.ms': '1',
  // kafkajs decodes only gzip without extra codecs: never compress.
  'producer.compression.type': 'none',
  'connector.client.config.override.policy': 'All',
});

export const CONNECT_HEAP = '512m';

export function workerProperties(s: StackSettings, pluginPath: string): Record<string, string> {
  return {
    'bootstrap.servers': `127.0.0.1:${s.kafkaPort}`,
    ...WORKER_SETTINGS,
    listeners: `http://127.0.0.1:${s.connectPort}`,
    'rest.advertised.host.name': '127.0.0.1',
    'rest.advertised.port': String(s.connectPort),
    'plugin.path': pluginPath,
    'plugin.discovery': 'service_load',
  };
}

export function startConnect(
  s: StackSettings,
  java: string,
  libDir: string,
  pluginPath: string,
  agentJar?: string,
): number {
  const dir = join(s.stateDir, 'connect');
  mkdirSync(dir, { recursive: true });
  const propsPath = join(dir, 'worker.properties');
  writeFileSync(propsPath, renderProperties(workerProperties(s, pluginPath)));
  const log4j = writeLog4j(s);
  return spawnDetached({
    name: 'connect',
    stateDir: s.stateDir,
    command: java,
    args: [
      '-Xms128m',
      `-Xmx${CONNECT_HEAP}`,
      ...JVM_COMMON,
      ...(agentJar ? [`-javaagent:${agentJar}`] : []),
      ...markerArgs(s.stateDir, 'connect'),
      `-Dlog4j2.configurationFile=${log4j}`,
      '-cp',
      `${libDir}/*`,
      'org.apache.kafka.connect.cli.ConnectDistributed',
      propsPath,
    ],
    cwd: dir,
  });
}
