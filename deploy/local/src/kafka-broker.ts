import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { StackError } from './errors.js';
import { LOG4J2_PROPERTIES, tailFile } from './log-files.js';
import { logFile, markerArgs, spawnDetached } from './processes.js';
import type { StackSettings } from './settings.js';
import { withAdmin } from './topics.js';

/**
 * One Kafka broker in KRaft mode (broker and controller in one JVM), replication factor 1
 * everywhere, on 127.0.0.1. Data in `<stateDir>/kafka/data`, formatted once.
 */

/**
 * Broker settings that are not about this machine's paths and ports. docker-compose.yml sets the
 * same values (a test compares them).
 */
export const BROKER_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  'process.roles': 'broker,controller',
  'node.id': '1',
  'controller.listener.names': 'CONTROLLER',
  'num.partitions': '6',
  'default.replication.factor': '1',
  'min.insync.replicas': '1',
  'auto.create.topics.enable': 'true',
  'offsets.topic.replication.factor': '1',
  'offsets.topic.num.partitions': '3',
  'transaction.state.log.replication.factor': '1',
  'transaction.state.log.min.isr': '1',
  'share.coordinator.state.topic.replication.factor': '1',
  'share.coordinator.state.topic.min.isr': '1',
  'group.initial.rebalance.delay.ms': '0',
  // Kafka's default floor is 6 s. Schedulers and workers ask for 3 s: a member killed with kill -9
  // holds its partitions until its session expires.
  'group.min.session.timeout.ms': '1000',
});

export const BROKER_HEAP = '768m';
export const JVM_COMMON = [
  '-XX:ActiveProcessorCount=2',
  '-XX:+UseG1GC',
  '-XX:MaxGCPauseMillis=20',
  '-Djava.awt.headless=true',
];

export function kafkaDir(s: StackSettings): string {
  return join(s.stateDir, 'kafka');
}

export function brokerProperties(s: StackSettings): Record<string, string> {
  return {
    ...BROKER_SETTINGS,
    'controller.quorum.voters': `1@127.0.0.1:${s.kafkaControllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${s.kafkaPort},CONTROLLER://127.0.0.1:${s.kafkaControllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${s.kafkaPort}`,
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': join(kafkaDir(s), 'data'),
  };
}

export function renderProperties(props: Record<string, string>): string {
  return `# Written by deploy/local on every start; edits are overwritten.\n${Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}

/**
 * A KRaft cluster id: 16 random bytes, base64url without padding (what StorageTool random-uuid
 * prints), never starting with '-' (1 in 64 would): the format command would take such an id for an
 * option and fail ("argument --cluster-id/-t: expected one argument"). Kafka's own Uuid.randomUuid
 * draws again in that case too.
 */
export function newClusterId(): string {
  for (;;) {
    const id = Buffer.from(randomUUID().replace(/-/g, ''), 'hex').toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

export function writeLog4j(s: StackSettings): string {
  const path = join(s.stateDir, 'log4j2.properties');
  writeFileSync(path, LOG4J2_PROPERTIES);
  return path;
}

/** Formats the storage on first start, then starts the broker JVM; returns its pid. */
export function startKafka(s: StackSettings, java: string, libDir: string): number {
  const dir = kafkaDir(s);
  mkdirSync(join(dir, 'data'), { recursive: true });
  const propsPath = join(dir, 'server.properties');
  writeFileSync(propsPath, renderProperties(brokerProperties(s)));
  const log4j = writeLog4j(s);
  const cp = `${libDir}/*`;
  const base = [
    `-Dlog4j2.configurationFile=${log4j}`,
    `-Dkafka.logs.dir=${join(s.stateDir, 'logs')}`,
    '-cp',
    cp,
  ];
  if (!existsSync(join(dir, 'data', 'meta.properties'))) {
    const idFile = join(dir, 'cluster-id');
    // An id left by a failed first format of an older version may start with '-': draw again.
    if (!existsSync(idFile) || readFileSync(idFile, 'utf8').trim().startsWith('-'))
      writeFileSync(idFile, `${newClusterId()}\n`);
    const id = readFileSync(idFile, 'utf8').trim();
    const r = spawnSync(
      java,
      [
        '-Xmx256m',
        ...base,
        'kafka.tools.StorageTool',
        'format',
        '-t',
        id,
        '-c',
        propsPath,
        '--ignore-formatted',
      ],
      {
        encoding: 'utf8',
        timeout: 120_000,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    if (r.status !== 0) {
      throw new StackError(
        'SCHED_E_STACK_START_FAILED',
        `formatting Kafka storage failed (exit ${r.status}): ${`${r.stdout}${r.stderr}`.trim().split('\n').slice(-8).join('\n')}`,
        `remove ${dir} and run again`,
      );
    }
  }
  return spawnDetached({
    name: 'kafka',
    stateDir: s.stateDir,
    command: java,
    args: [
      `-Xms256m`,
      `-Xmx${BROKER_HEAP}`,
      ...JVM_COMMON,
      ...markerArgs(s.stateDir, 'kafka'),
      ...base,
      'kafka.Kafka',
      propsPath,
    ],
    cwd: dir,
  });
}

/** Health: the broker answers a metadata request and has an active controller. */
export async function kafkaHealth(brokers: string[]): Promise<{ ok: boolean; detail: string }> {
  try {
    const cluster = await withAdmin(brokers, (admin) => admin.describeCluster());
    if (cluster.brokers.length === 0) return { ok: false, detail: 'no broker in metadata' };
    if (cluster.controller === null || cluster.controller < 0)
      return { ok: false, detail: 'no active controller' };
    return {
      ok: true,
      detail: `metadata ok (${cluster.brokers.length} broker, controller ${cluster.controller})`,
    };
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
}

export function kafkaLogTail(s: StackSettings, lines = 15): string {
  return tailFile(logFile(s.stateDir, 'kafka'), lines);
}
