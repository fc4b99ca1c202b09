import { buildConfig, fromEnv, requireNonEmpty, requirePositiveInt } from '@sched/config';

export interface ApiOptions {
  host: string;
  port: number;
  databaseUrl: string;
  schema: string;
  brokers: string[];
  registryUrl: string;
  commandsTopic: string;
  /** `key=callerId:tenantId:perm|perm,…` (see api-keys.ts). */
  apiKeys: string;
  /** `keys`: every request authenticated by its API key; `off`: development mode (see buildApp). */
  auth: string;
  logLevel: string;
}

export const apiDefaults: ApiOptions = {
  host: '127.0.0.1',
  port: 3000,
  databaseUrl: 'postgres://sched:sched@127.0.0.1:55432/sched',
  schema: 'public',
  brokers: ['127.0.0.1:9092'],
  registryUrl: 'http://127.0.0.1:8081/apis/ccompat/v7',
  commandsTopic: 'sched.commands',
  apiKeys: '',
  auth: 'keys',
  logLevel: 'info',
};

/** Defaults → environment → validation (every problem, each with its fix) → frozen. */
export function apiConfig(env: Record<string, string | undefined>): Readonly<ApiOptions> {
  const fromEnvironment = fromEnv<ApiOptions>('api', env, {
    host: { env: 'SCHED_API_HOST', kind: 'string' },
    port: { env: 'SCHED_API_PORT', kind: 'int' },
    databaseUrl: { env: 'DATABASE_URL', kind: 'string' },
    schema: { env: 'SCHED_DB_SCHEMA', kind: 'string' },
    brokers: { env: 'KAFKA_BROKERS', kind: 'list' },
    registryUrl: { env: 'SCHED_REGISTRY_URL', kind: 'string' },
    commandsTopic: { env: 'SCHED_COMMANDS_TOPIC', kind: 'string' },
    apiKeys: { env: 'SCHED_API_KEYS', kind: 'string' },
    auth: { env: 'SCHED_API_AUTH', kind: 'string' },
    logLevel: { env: 'LOG_LEVEL', kind: 'string' },
  });
  return buildConfig('api', apiDefaults, fromEnvironment, (c, problem) => {
    requirePositiveInt(problem, 'port (SCHED_API_PORT)', c.port);
    if (c.port > 65_535) problem('port (SCHED_API_PORT) must be at most 65535');
    requireNonEmpty(problem, 'brokers (KAFKA_BROKERS)', c.brokers);
    if (c.auth !== 'keys' && c.auth !== 'off')
      problem('auth (SCHED_API_AUTH) must be keys (the default) or off (development only)');
    else if (c.auth === 'keys' && c.apiKeys.trim() === '')
      problem(
        'apiKeys (SCHED_API_KEYS) is empty: give at least one key=callerId:tenantId:perms (or its sha256: digest), or set SCHED_API_AUTH=off for development, where every request is tenant default',
      );
    if (!/^postgres(ql)?:\/\//.test(c.databaseUrl))
      problem('databaseUrl (DATABASE_URL) must be a postgres:// URL');
    if (!/^https?:\/\//.test(c.registryUrl))
      problem('registryUrl (SCHED_REGISTRY_URL) must be an http(s) URL to the ccompat/v7 API');
  });
}
