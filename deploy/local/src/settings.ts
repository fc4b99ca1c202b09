import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildConfig, fromEnv, type EnvSpec } from '@sched/config';

/** The repository this package lives in (`deploy/local/src/` → three levels up). */
export const REPO_ROOT = resolve(fileURLToPath(new URL('../../../', import.meta.url)));
/** This package's own directory (recipe, connector file, compose helpers). */
export const PACKAGE_DIR = resolve(fileURLToPath(new URL('../', import.meta.url)));

/** Role, password and database of the stack's own Postgres (local development only). */
export const STACK_DB = Object.freeze({
  user: 'sched',
  password: 'sched',
  database: 'sched',
  registryDatabase: 'registry',
});

export type Env = Record<string, string | undefined>;

/**
 * Everything `up`, `down` and `status` need to know, read once from the environment.
 * Ports are on 127.0.0.1. Paths are absolute.
 */
export interface StackSettings {
  /** `.stack/` at the repo root unless SCHED_STACK_DIR says otherwise: logs/, pids/, data. */
  stateDir: string;
  /** Unpacked distributions, shared by every clone: `${XDG_CACHE_HOME:-~/.cache}/sched-stack`. */
  cacheDir: string;
  pgPort: number;
  kafkaPort: number;
  kafkaControllerPort: number;
  connectPort: number;
  registryPort: number;
  registryMgmtPort: number;
  /** DATABASE_URL: when set, the stack uses that Postgres and starts none of its own. */
  externalDatabaseUrl: string | undefined;
  /** `sql` keeps schema ids across restarts (database `registry`); `mem` forgets them. */
  registryStorage: 'sql' | 'mem';
  /** Optional explicit JDK for Kafka + Connect (17+) and for the registry (21+). */
  javaHome: string | undefined;
  registryJavaHome: string | undefined;
  /** Optional directory holding initdb / pg_ctl / postgres. */
  pgBinDir: string | undefined;
  /** Start Connect with the poll-timer agent (`java/PollTimerAgent.java`). Default true. */
  connectPollTimerFix: boolean;
}

type EnvOptions = Omit<StackSettings, 'stateDir' | 'cacheDir' | 'externalDatabaseUrl'> & {
  stateDir: string;
  cacheHome: string;
  externalDatabaseUrl: string;
};

const ENV_SPEC: EnvSpec<EnvOptions> = {
  stateDir: { env: 'SCHED_STACK_DIR', kind: 'string' },
  cacheHome: { env: 'XDG_CACHE_HOME', kind: 'string' },
  pgPort: { env: 'SCHED_PG_PORT', kind: 'int' },
  kafkaPort: { env: 'SCHED_KAFKA_PORT', kind: 'int' },
  kafkaControllerPort: { env: 'SCHED_KAFKA_CONTROLLER_PORT', kind: 'int' },
  connectPort: { env: 'SCHED_CONNECT_PORT', kind: 'int' },
  registryPort: { env: 'SCHED_REGISTRY_PORT', kind: 'int' },
  registryMgmtPort: { env: 'SCHED_REGISTRY_MGMT_PORT', kind: 'int' },
  externalDatabaseUrl: { env: 'DATABASE_URL', kind: 'string' },
  registryStorage: { env: 'SCHED_REGISTRY_STORAGE', kind: 'string' },
  javaHome: { env: 'SCHED_JAVA_HOME', kind: 'string' },
  registryJavaHome: { env: 'SCHED_REGISTRY_JAVA_HOME', kind: 'string' },
  pgBinDir: { env: 'SCHED_PG_BIN_DIR', kind: 'string' },
  connectPollTimerFix: { env: 'SCHED_CONNECT_POLL_TIMER_FIX', kind: 'bool' },
};

/** Port settings with the environment variable that changes each (for messages). */
export const PORT_ENV = Object.freeze({
  pgPort: 'SCHED_PG_PORT',
  kafkaPort: 'SCHED_KAFKA_PORT',
  kafkaControllerPort: 'SCHED_KAFKA_CONTROLLER_PORT',
  connectPort: 'SCHED_CONNECT_PORT',
  registryPort: 'SCHED_REGISTRY_PORT',
  registryMgmtPort: 'SCHED_REGISTRY_MGMT_PORT',
} as const);
export type PortKey = keyof typeof PORT_ENV;

export const DEFAULT_PORTS: Readonly<Record<PortKey, number>> = Object.freeze({
  pgPort: 55432,
  kafkaPort: 9092,
  kafkaControllerPort: 9093,
  connectPort: 8083,
  registryPort: 8081,
  registryMgmtPort: 9001,
});

/** Options → defaults → validate (every problem at once) → freeze. */
export function stackSettings(env: Env): Readonly<StackSettings> {
  const raw = fromEnv<EnvOptions>('local stack', env, ENV_SPEC);
  const home = env.HOME ?? homedir();
  const stateDir = resolve(REPO_ROOT, raw.stateDir ?? '.stack');
  const cacheHome =
    raw.cacheHome !== undefined && isAbsolute(raw.cacheHome) ? raw.cacheHome : join(home, '.cache');
  const defaults: StackSettings = {
    stateDir,
    cacheDir: join(cacheHome, 'sched-stack'),
    ...DEFAULT_PORTS,
    externalDatabaseUrl: undefined,
    registryStorage: 'sql',
    javaHome: undefined,
    registryJavaHome: undefined,
    pgBinDir: undefined,
    connectPollTimerFix: true,
  };
  const { cacheHome: _c, stateDir: _s, ...options } = raw;
  return buildConfig<StackSettings>(
    'local stack',
    defaults,
    options as Partial<StackSettings>,
    (s, problem) => {
      const seen = new Map<number, string>();
      for (const key of Object.keys(PORT_ENV) as PortKey[]) {
        const port = s[key];
        if (!Number.isInteger(port) || port < 1 || port > 65535)
          problem(`${PORT_ENV[key]}=${port} is not a TCP port (1-65535)`);
        const other = seen.get(port);
        if (other) problem(`${PORT_ENV[key]} and ${other} are both ${port}: give each service its own port`);
        seen.set(port, PORT_ENV[key]);
      }
      if (s.registryStorage !== 'sql' && s.registryStorage !== 'mem') {
        problem(`SCHED_REGISTRY_STORAGE="${String(s.registryStorage)}" must be sql or mem`);
      }
      if (s.externalDatabaseUrl !== undefined) {
        try {
          const u = new URL(s.externalDatabaseUrl);
          if (!/^postgres(ql)?:$/.test(u.protocol)) problem('DATABASE_URL must be a postgres:// URL');
        } catch {
          problem('DATABASE_URL is not a URL (expected postgres://user:password@host:port/database)');
        }
      }
    },
  );
}

/** Where the stack's services answer; what tests, the demo and benchmarks connect to. */
export interface StackEndpoints {
  databaseUrl: string;
  kafkaBrokers: string[];
  /** The Confluent-compatible API base: `http://127.0.0.1:<port>/apis/ccompat/v7`. */
  registryUrl: string;
  connectUrl: string;
  stateDir: string;
}

export function endpointsOf(s: StackSettings): StackEndpoints {
  return {
    databaseUrl: s.externalDatabaseUrl ?? ownDatabaseUrl(s, STACK_DB.database),
    kafkaBrokers: [`127.0.0.1:${s.kafkaPort}`],
    registryUrl: `http://127.0.0.1:${s.registryPort}/apis/ccompat/v7`,
    connectUrl: `http://127.0.0.1:${s.connectPort}`,
    stateDir: s.stateDir,
  };
}

export function ownDatabaseUrl(s: StackSettings, database: string): string {
  return `postgres://${STACK_DB.user}:${STACK_DB.password}@127.0.0.1:${s.pgPort}/${database}`;
}

/** The database URL with a different database name (same server, same credentials). */
export function withDatabase(databaseUrl: string, database: string): string {
  const u = new URL(databaseUrl);
  u.pathname = `/${database}`;
  return u.toString();
}

/** `{ host, port, database, user, password }` of a postgres:// URL (defaults as libpq's). */
export function parseDatabaseUrl(databaseUrl: string): {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
} {
  const u = new URL(databaseUrl);
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 5432,
    database: decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres',
    user: decodeURIComponent(u.username) || 'postgres',
    password: decodeURIComponent(u.password),
  };
}
