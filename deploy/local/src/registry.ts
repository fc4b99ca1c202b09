import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { JVM_COMMON } from './kafka-broker.js';
import { markerArgs, spawnDetached } from './processes.js';
import { parseDatabaseUrl, type StackSettings } from './settings.js';

/**
 * Apicurio Registry 3.x (Quarkus, Java 21+) serving the Confluent schema-registry API at
 * `/apis/ccompat/v7`. With SQL storage its artifacts, and so the schema ids in every
 * Confluent-framed record, survive restarts.
 */

export const REGISTRY_HEAP = '512m';

export interface RegistryStorage {
  kind: 'sql' | 'mem';
  /** postgres:// URL of the `registry` database when kind is sql. */
  databaseUrl?: string;
}

export function registryArgs(s: StackSettings, storage: RegistryStorage): string[] {
  const props: Record<string, string> = {
    'quarkus.http.host': '127.0.0.1',
    'quarkus.http.port': String(s.registryPort),
    'quarkus.management.host': '127.0.0.1',
    'quarkus.management.port': String(s.registryMgmtPort),
    'quarkus.management.enabled': 'true',
  };
  if (storage.kind === 'sql' && storage.databaseUrl) {
    const db = parseDatabaseUrl(storage.databaseUrl);
    Object.assign(props, {
      'apicurio.storage.kind': 'sql',
      'apicurio.storage.sql.kind': 'postgresql',
      'apicurio.datasource.url': `jdbc:postgresql://${db.host}:${db.port}/${db.database}`,
      'apicurio.datasource.username': db.user,
      'apicurio.datasource.password': db.password,
    });
  }
  return Object.entries(props).map(([k, v]) => `-D${k}=${v}`);
}

export function startRegistry(
  s: StackSettings,
  java: string,
  apicurioDir: string,
  storage: RegistryStorage,
): number {
  const dir = join(s.stateDir, 'registry');
  mkdirSync(dir, { recursive: true });
  return spawnDetached({
    name: 'registry',
    stateDir: s.stateDir,
    command: java,
    args: [
      '-Xms128m',
      `-Xmx${REGISTRY_HEAP}`,
      ...JVM_COMMON,
      ...markerArgs(s.stateDir, 'registry'),
      `-Djava.io.tmpdir=${dir}`,
      ...registryArgs(s, storage),
      '-jar',
      join(apicurioDir, 'quarkus-run.jar'),
    ],
    cwd: dir,
  });
}

/** Health: the Confluent API answers `GET /subjects` with a JSON array. */
export async function registryHealth(registryUrl: string): Promise<{ ok: boolean; detail: string }> {
  try {
    const res = await fetch(`${registryUrl}/subjects`, { signal: AbortSignal.timeout(3000) });
    const body = (await res.json()) as unknown;
    if (res.status === 200 && Array.isArray(body))
      return { ok: true, detail: `ccompat/v7 answers (${body.length} subjects)` };
    return { ok: false, detail: `GET /subjects: HTTP ${res.status}` };
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
}
