import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StackError } from './errors.js';
import { PACKAGE_DIR, parseDatabaseUrl } from './settings.js';

/**
 * The Debezium outbox connector, defined once in `deploy/local/connectors/sched-outbox.json`
 * (docker-compose's init step registers the same file). `${SCHED_DB_*}` placeholders are filled
 * in at registration; every other `${…}` (EventRouter's `${routedByValue}`) is left for Connect.
 */

export const CONNECTOR_FILE = join(PACKAGE_DIR, 'connectors', 'sched-outbox.json');
export const CONNECTOR_NAME = 'sched-outbox';
export const CONNECTOR_PLACEHOLDERS = [
  'SCHED_DB_HOST',
  'SCHED_DB_PORT',
  'SCHED_DB_NAME',
  'SCHED_DB_USER',
  'SCHED_DB_PASSWORD',
] as const;
export type ConnectorPlaceholder = (typeof CONNECTOR_PLACEHOLDERS)[number];

export type ConnectorConfig = Record<string, string>;

/** The committed connector file as is (placeholders unfilled). */
export function connectorTemplate(path: string = CONNECTOR_FILE): ConnectorConfig {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`${path}: expected one JSON object`);
  const out: ConnectorConfig = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v !== 'string')
      throw new Error(`${path}: "${k}" must be a string (Connect configs are strings)`);
    out[k] = v;
  }
  return out;
}

/** Replaces `${NAME}` for the known placeholders in every value. */
export function fillPlaceholders(
  template: ConnectorConfig,
  values: Record<ConnectorPlaceholder, string>,
): ConnectorConfig {
  const out: ConnectorConfig = {};
  for (const [k, v] of Object.entries(template)) {
    out[k] = v.replace(/\$\{(SCHED_DB_[A-Z]+)\}/g, (whole, name: string) =>
      (CONNECTOR_PLACEHOLDERS as readonly string[]).includes(name)
        ? values[name as ConnectorPlaceholder]
        : whole,
    );
  }
  return out;
}

/** The connector config for the database of `databaseUrl`, as registered. */
export function connectorConfig(
  databaseUrl: string,
  template: ConnectorConfig = connectorTemplate(),
): ConnectorConfig {
  const db = parseDatabaseUrl(databaseUrl);
  return fillPlaceholders(template, {
    SCHED_DB_HOST: db.host,
    SCHED_DB_PORT: String(db.port),
    SCHED_DB_NAME: db.database,
    SCHED_DB_USER: db.user,
    SCHED_DB_PASSWORD: db.password,
  });
}

async function http(
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; json: unknown; text: string }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** The worker's REST API answers (`GET /`). */
export async function connectAnswers(connectUrl: string): Promise<boolean> {
  try {
    return (await http('GET', `${connectUrl}/`)).status === 200;
  } catch {
    return false;
  }
}

/**
 * PUT /connectors/<name>/config unless the worker already has exactly this config (a PUT of the
 * same config would restart the task for nothing). Retries while the worker is still joining.
 */
export async function registerConnector(
  connectUrl: string,
  config: ConnectorConfig,
): Promise<'created' | 'updated' | 'unchanged'> {
  const name = config.name ?? CONNECTOR_NAME;
  const current = await http('GET', `${connectUrl}/connectors/${name}/config`);
  if (current.status === 200 && sameConfig(current.json as ConnectorConfig, config)) return 'unchanged';
  const put = await http('PUT', `${connectUrl}/connectors/${name}/config`, config);
  if (put.status === 200 || put.status === 201) return put.status === 201 ? 'created' : 'updated';
  throw new StackError(
    'SCHED_E_STACK_CONNECTOR_FAILED',
    `Connect refused the connector config (HTTP ${put.status}): ${put.text.slice(0, 2000)}`,
    `check ${CONNECTOR_FILE} and the Connect log`,
    put.status === 409 || put.status >= 500,
  );
}

function sameConfig(a: ConnectorConfig, b: ConnectorConfig): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}

export interface ConnectorState {
  connector: string;
  tasks: { id: number; state: string; trace?: string }[];
}

export async function connectorState(
  connectUrl: string,
  name = CONNECTOR_NAME,
): Promise<ConnectorState | undefined> {
  const r = await http('GET', `${connectUrl}/connectors/${name}/status`);
  if (r.status !== 200) return undefined;
  const body = r.json as {
    connector?: { state?: string };
    tasks?: { id: number; state: string; trace?: string }[];
  };
  return { connector: body.connector?.state ?? 'UNKNOWN', tasks: body.tasks ?? [] };
}

/** Restarts a FAILED connector or task (POST …/restart?includeTasks=true&onlyFailed=true). */
export async function restartFailed(connectUrl: string, name = CONNECTOR_NAME): Promise<void> {
  await http('POST', `${connectUrl}/connectors/${name}/restart?includeTasks=true&onlyFailed=true`);
}

/** PUT …/stop, …/resume (Kafka Connect 3.5+): a STOPPED connector keeps its config but runs no task. */
export async function setConnectorRunning(
  connectUrl: string,
  running: boolean,
  name = CONNECTOR_NAME,
): Promise<void> {
  const r = await http('PUT', `${connectUrl}/connectors/${name}/${running ? 'resume' : 'stop'}`);
  if (r.status >= 300) {
    throw new StackError(
      'SCHED_E_STACK_CONNECTOR_FAILED',
      `could not ${running ? 'resume' : 'stop'} ${name}: HTTP ${r.status} ${r.text.slice(0, 300)}`,
      'see the Connect log',
      true,
    );
  }
}

/**
 * Forgets the connector's stored source offsets (the LSN it had confirmed), so its next start
 * streams from wherever its replication slot is. Needed after the slot was dropped or
 * invalidated: Debezium otherwise refuses to start ("no longer available on the server").
 * Stops the connector first (the offsets API requires it) and leaves it STOPPED.
 */
export async function resetConnectorOffsets(connectUrl: string, name = CONNECTOR_NAME): Promise<void> {
  await setConnectorRunning(connectUrl, false, name);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const st = await connectorState(connectUrl, name);
    if (st?.connector === 'STOPPED' && st.tasks.length === 0) break;
    if (Date.now() > deadline)
      throw new StackError(
        'SCHED_E_STACK_TIMEOUT',
        `${name} did not stop within 30 s`,
        'see the Connect log',
        true,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
  const r = await http('DELETE', `${connectUrl}/connectors/${name}/offsets`);
  if (r.status !== 200) {
    throw new StackError(
      'SCHED_E_STACK_CONNECTOR_FAILED',
      `could not reset the offsets of ${name}: HTTP ${r.status} ${r.text.slice(0, 300)}`,
      'see the Connect log',
      true,
    );
  }
}

/** Debezium's words when its stored LSN is older than what the slot can give. */
export const OFFSET_GONE = /no longer available on the server/;
