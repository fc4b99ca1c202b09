import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { BROKER_SETTINGS } from './kafka-broker.js';
import { WORKER_SETTINGS } from './connect-worker.js';
import {
  CONNECTOR_FILE,
  CONNECTOR_PLACEHOLDERS,
  connectorTemplate,
  fillPlaceholders,
  type ConnectorPlaceholder,
} from './connector.js';
import { recipeVersions } from './distributions.js';
import { RECORD_ROUTER_CLASS, RECORD_ROUTER_SOURCE } from './connect-smt.js';
import { DEFAULT_PORTS, REPO_ROOT } from './settings.js';
import { STACK_TOPICS } from './topics.js';

// docker-compose.yml cannot run here (no Docker engine), so this reads it and checks that it
// describes the same stack as deploy/local: topics, host ports, connector, broker and worker settings.

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string | number>;
  ports?: string[];
  volumes?: string[];
}
const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const svc = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const env = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(svc(name).environment ?? {}).map(([k, v]) => [k, String(v)]));

/** `127.0.0.1:HOST:CONTAINER` mappings of a service, as [host, container]. */
const ports = (name: string): [number, number][] =>
  (svc(name).ports ?? []).map((p) => {
    const m = /^127\.0\.0\.1:(\d+):(\d+)$/.exec(p);
    if (!m) throw new Error(`${name}: port "${p}" must be bound as 127.0.0.1:HOST:CONTAINER`);
    return [Number(m[1]), Number(m[2])];
  });

/** apache/kafka: KAFKA_A_B → a.b (`__` → `_`, `___` → `-`). */
function kafkaProps(e: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(e)) {
    if (!k.startsWith('KAFKA_') || k === 'KAFKA_HEAP_OPTS') continue;
    const key = k
      .slice(6)
      .toLowerCase()
      .replace(/___/g, '-')
      .replace(/__/g, '\0')
      .replace(/_/g, '.')
      .replace(/\0/g, '_');
    out[key] = v;
  }
  return out;
}

/** quay.io/debezium/connect: CONNECT_A_B → a.b, plus its few named variables. */
function connectProps(e: Record<string, string>): Record<string, string> {
  const named = [
    'BOOTSTRAP_SERVERS',
    'GROUP_ID',
    'CONFIG_STORAGE_TOPIC',
    'OFFSET_STORAGE_TOPIC',
    'STATUS_STORAGE_TOPIC',
    'KEY_CONVERTER',
    'VALUE_CONVERTER',
  ];
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(e)) {
    if (k.startsWith('CONNECT_')) out[k.slice(8).toLowerCase().replace(/_/g, '.')] = v;
    else if (named.includes(k)) out[k.toLowerCase().replace(/_/g, '.')] = v;
  }
  return out;
}

describe('docker-compose.yml agrees with deploy/local', () => {
  it('creates the same topics with the same partition counts', () => {
    const listed = env('connect-init')
      .SCHED_TOPICS?.split(/\s+/)
      .map((spec) => {
        const [name, partitions] = spec.split(':');
        return { name, partitions: Number(partitions) };
      });
    expect(listed).toEqual(STACK_TOPICS.map((t) => ({ ...t })));
  });

  it('publishes the same host ports, on 127.0.0.1 only', () => {
    expect(ports('postgres')).toEqual([[DEFAULT_PORTS.pgPort, 5432]]);
    expect(ports('kafka')).toEqual([[DEFAULT_PORTS.kafkaPort, 9092]]);
    expect(ports('connect')).toEqual([[DEFAULT_PORTS.connectPort, 8083]]);
    expect(ports('registry')).toEqual([
      [DEFAULT_PORTS.registryPort, 8080],
      [DEFAULT_PORTS.registryMgmtPort, 9000],
    ]);
    // Every published port of every service is bound to 127.0.0.1 (ports() throws otherwise).
    for (const name of Object.keys(compose.services)) ports(name);
    // What the host is told: the broker advertises 127.0.0.1:<kafka port>.
    expect(env('kafka').KAFKA_ADVERTISED_LISTENERS).toContain(`HOST://127.0.0.1:${DEFAULT_PORTS.kafkaPort}`);
  });

  it('registers the connector from the same file, with every placeholder filled for the compose database', () => {
    const init = svc('connect-init');
    const e = env('connect-init');
    const mount = (init.volumes ?? [])
      .map((v) => v.split(':'))
      .find(([, target]) => target === e.CONNECTOR_FILE);
    expect(mount, 'connect-init mounts CONNECTOR_FILE').toBeDefined();
    expect(resolve(REPO_ROOT, mount?.[0] ?? '')).toBe(CONNECTOR_FILE);
    expect(init.image).toBe(svc('connect').image);

    const pg = env('postgres');
    const values = Object.fromEntries(CONNECTOR_PLACEHOLDERS.map((p) => [p, e[p]])) as Record<
      ConnectorPlaceholder,
      string
    >;
    expect(values).toEqual({
      SCHED_DB_HOST: 'postgres',
      SCHED_DB_PORT: String(ports('postgres')[0]?.[1]),
      SCHED_DB_NAME: pg.POSTGRES_DB,
      SCHED_DB_USER: pg.POSTGRES_USER,
      SCHED_DB_PASSWORD: pg.POSTGRES_PASSWORD,
    });
    const filled = fillPlaceholders(connectorTemplate(), values);
    expect(JSON.stringify(filled)).not.toMatch(/\$\{SCHED_/);
    expect(filled['database.hostname']).toBe('postgres');

    // The init script fills exactly the placeholders the TypeScript fills.
    const script = readFileSync(join(REPO_ROOT, 'deploy/local/compose/init.sh'), 'utf8');
    const loop = /for name in ([A-Z_ ]+); do/.exec(script)?.[1]?.trim().split(/\s+/);
    expect(loop).toEqual([...CONNECTOR_PLACEHOLDERS]);
    expect(
      resolve(REPO_ROOT, (init.volumes ?? []).find((v) => v.includes('init.sh'))?.split(':')[0] ?? ''),
    ).toBe(join(REPO_ROOT, 'deploy/local/compose/init.sh'));
  });

  it('runs the broker with the same settings', () => {
    const props = kafkaProps(env('kafka'));
    for (const [k, v] of Object.entries(BROKER_SETTINGS)) expect({ [k]: props[k] }).toEqual({ [k]: v });
  });

  it('runs the Connect worker with the same settings', () => {
    const props = connectProps(env('connect'));
    for (const [k, v] of Object.entries(WORKER_SETTINGS)) expect({ [k]: props[k] }).toEqual({ [k]: v });
    expect(props['bootstrap.servers']).toBe('kafka:19092');
  });

  it('gives Postgres logical WAL and the registry SQL storage in database registry', () => {
    const cmd = svc('postgres').command ?? [];
    expect(cmd).toContain('wal_level=logical');
    expect(cmd).toContain('synchronous_commit=on');
    expect(env('registry').APICURIO_STORAGE_KIND).toBe('sql');
    expect(env('registry').APICURIO_DATASOURCE_URL).toBe('jdbc:postgresql://postgres:5432/registry');
    expect(readFileSync(join(REPO_ROOT, 'deploy/local/compose/postgres-init.sql'), 'utf8')).toMatch(
      /CREATE DATABASE registry/,
    );
  });

  it('builds the same record router into a volume on the Connect plugin path, against the pinned Kafka', () => {
    const build = svc('connect-smt');
    const mounts = build.volumes ?? [];
    const src = mounts.find((v) => v.endsWith(`:${env('connect-smt').SMT_SOURCE}:ro`))?.split(':')[0];
    expect(resolve(REPO_ROOT, src ?? '')).toBe(RECORD_ROUTER_SOURCE);
    expect(env('connect-smt').KAFKA_VERSION).toBe(recipeVersions().kafka);
    const out = mounts.find((v) => v.endsWith(`:${env('connect-smt').SMT_OUT}`))?.split(':')[0];
    expect(out).toBeTruthy();
    expect(svc('connect').volumes ?? []).toContain(`${out}:/kafka/connect/sched-connect-smt:ro`);
    const script = readFileSync(join(REPO_ROOT, 'deploy/local/compose/build-smt.sh'), 'utf8');
    expect(script).toContain(`echo ${RECORD_ROUTER_CLASS} >`);
    expect(script).toContain('META-INF/services/org.apache.kafka.connect.transforms.Transformation');
  });

  it('pins the images to the versions of the recipe', () => {
    const v = recipeVersions();
    expect(svc('kafka').image).toBe(`apache/kafka:${v.kafka}`);
    expect(svc('connect').image).toBe(`quay.io/debezium/connect:${v.debezium}`);
    expect(svc('registry').image).toBe(`apicurio/apicurio-registry:${v.apicurio}`);
  });

  it('points every app at the compose services', () => {
    const pg = env('postgres');
    for (const app of ['api', 'scheduler', 'worker']) {
      const e = env(app);
      expect(svc(app).command).toEqual(['npx', 'tsx', `apps/${app}/src/main.ts`]);
      expect(e.DATABASE_URL).toBe(
        `postgres://${pg.POSTGRES_USER}:${pg.POSTGRES_PASSWORD}@postgres:5432/${pg.POSTGRES_DB}`,
      );
      expect(env('kafka').KAFKA_ADVERTISED_LISTENERS).toContain(`DOCKER://${e.KAFKA_BROKERS}`);
      expect(e.SCHED_REGISTRY_URL).toBe('http://registry:8080/apis/ccompat/v7');
    }
  });
});
