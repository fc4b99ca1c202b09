import { ensureDistributions, type Distributions } from './distributions.js';
import { findJava, type JavaRuntime } from './java.js';
import { findPgBinaries, pgLayout, postgresPid, type PgBinaries } from './postgres.js';
import { requireFreePort } from './ports.js';
import { logFile, ourPid } from './processes.js';
import {
  endpointsOf,
  ownDatabaseUrl,
  withDatabase,
  type Env,
  type PortKey,
  type StackEndpoints,
  type StackSettings,
} from './settings.js';

/** The services of the stack, in start order. */
export const SERVICES = ['postgres', 'kafka', 'registry', 'connect'] as const;
export type ServiceName = (typeof SERVICES)[number];

export const SLOT_NAME = 'sched_outbox';

export interface ServiceStatus {
  name: ServiceName;
  healthy: boolean;
  /** Our process, when the stack started it and it runs. */
  pid: number | undefined;
  port: number;
  /** Why it is healthy or not, in a few words. */
  detail: string;
  /** Not started by the stack (Postgres given by DATABASE_URL). */
  external: boolean;
}

/** What one stack command works with: settings, endpoints, a progress sink and lazily found tools. */
export class StackContext {
  readonly endpoints: StackEndpoints;
  private java17?: JavaRuntime;
  private java21?: JavaRuntime;
  private pgBin?: PgBinaries;
  private dist?: Promise<Distributions>;

  constructor(
    readonly s: Readonly<StackSettings>,
    readonly env: Env,
    readonly say: (line: string) => void,
  ) {
    this.endpoints = endpointsOf(s);
  }

  get ownPostgres(): boolean {
    return this.s.externalDatabaseUrl === undefined;
  }

  javaForKafka(): JavaRuntime {
    this.java17 ??= findJava(this.env, 17, 'Kafka and Kafka Connect', this.s.javaHome, 'SCHED_JAVA_HOME');
    return this.java17;
  }

  javaForRegistry(): JavaRuntime {
    this.java21 ??= findJava(
      this.env,
      21,
      'Apicurio Registry 3',
      this.s.registryJavaHome ?? this.s.javaHome,
      'SCHED_REGISTRY_JAVA_HOME',
    );
    return this.java21;
  }

  pgBinaries(): PgBinaries {
    this.pgBin ??= findPgBinaries(this.s, this.env);
    return this.pgBin;
  }

  distributions(): Promise<Distributions> {
    this.dist ??= ensureDistributions(this.s, this.env, this.javaForKafka().java, this.say);
    return this.dist;
  }

  /** Admin URL of the Postgres server (database `postgres`). */
  adminUrl(): string {
    return this.s.externalDatabaseUrl
      ? withDatabase(this.s.externalDatabaseUrl, 'postgres')
      : ownDatabaseUrl(this.s, 'postgres');
  }
}

/** The ports each service listens on (checked before it starts). */
export const SERVICE_PORTS: Record<ServiceName, PortKey[]> = {
  postgres: ['pgPort'],
  kafka: ['kafkaPort', 'kafkaControllerPort'],
  registry: ['registryPort', 'registryMgmtPort'],
  connect: ['connectPort'],
};

export const LABEL: Record<ServiceName, string> = {
  postgres: 'Postgres',
  kafka: 'Kafka',
  registry: 'schema registry',
  connect: 'Kafka Connect',
};

/** Our running process for `name`, if any. */
export function servicePid(ctx: StackContext, name: ServiceName): number | undefined {
  return name === 'postgres'
    ? ctx.ownPostgres
      ? postgresPid(ctx.s)
      : undefined
    : ourPid(ctx.s.stateDir, name);
}

export async function requireServicePorts(ctx: StackContext, name: ServiceName): Promise<void> {
  for (const key of SERVICE_PORTS[name]) await requireFreePort(key, ctx.s[key], LABEL[name]);
}

export function serviceLog(ctx: StackContext, name: ServiceName): string {
  return name === 'postgres' ? pgLayout(ctx.s).logFile : logFile(ctx.s.stateDir, name);
}

/** Fails fast (with the log's last lines) when the process we wait for has died. */
export function secs(t0: number): string {
  return `${((Date.now() - t0) / 1000).toFixed(1)} s`;
}

export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}
