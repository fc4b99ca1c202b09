import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StackError } from './errors.js';
import { CONNECTOR_NAME, resetConnectorOffsets } from './connector.js';
import { RECORD_ROUTER_JAR, recordRouterPluginDir } from './connect-smt.js';
import { dropSlot, slotInfo } from './postgres.js';
import { isAlive } from './processes.js';
import {
  SERVICES,
  SLOT_NAME,
  StackContext,
  requireServicePorts,
  secs,
  servicePid,
  type ServiceName,
  type ServiceStatus,
} from './context.js';
import { formatBytes, serviceStatus } from './health.js';
import { START, stopServiceProcess } from './services.js';
import { stackSettings, type Env, type StackEndpoints } from './settings.js';
import { sleep } from './wait.js';

/**
 * The stack's commands: `up` (idempotent), `down` (stops only what `up` started), `status`,
 * and `restart <service>`. Commands that change the stack serialise on `<stateDir>/lock`, so two
 * `up`s started together (a test run and the demo) do not race.
 */

export interface StackOptions {
  env?: Env;
  /** Progress lines; default: stderr with a `[stack]` prefix. */
  say?: (line: string) => void;
}

const defaultSay = (line: string): void => {
  process.stderr.write(`[stack] ${line}\n`);
};

function context(options: StackOptions): StackContext {
  const env = options.env ?? process.env;
  const ctx = new StackContext(stackSettings(env), env, options.say ?? defaultSay);
  for (const dir of ['logs', 'pids']) mkdirSync(join(ctx.s.stateDir, dir), { recursive: true });
  return ctx;
}

/**
 * The JVM Connect runs on and a classpath holding Connect's jars and the record router (built if
 * missing, as `up` does): for running the router outside Connect, as its test does. Fetches the
 * pinned Kafka release if it is not cached yet; starts nothing.
 */
export async function recordRouterRuntime(
  options: StackOptions = {},
): Promise<{ java: string; classpath: string }> {
  const ctx = context(options);
  const java = ctx.javaForKafka().java;
  const dist = await ctx.distributions();
  const dir = recordRouterPluginDir(ctx.s.cacheDir, java, dist.kafkaLibDir, dist.versions.kafka, ctx.say);
  return { java, classpath: [join(dist.kafkaLibDir, '*'), join(dir, RECORD_ROUTER_JAR)].join(':') };
}

const LOCK_WAIT_MS = 15 * 60_000;

function lockMtimeMs(lock: string): number {
  try {
    return statSync(lock).mtimeMs;
  } catch {
    return Date.now();
  }
}

async function withLock<T>(ctx: StackContext, what: string, work: () => Promise<T>): Promise<T> {
  const lock = join(ctx.s.stateDir, 'lock');
  const deadline = Date.now() + LOCK_WAIT_MS;
  let told = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'owner'), `${process.pid} ${what}\n`);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let owner: number | undefined;
      let ownerWhat = '';
      try {
        const [pid, ...rest] = readFileSync(join(lock, 'owner'), 'utf8').trim().split(' ');
        owner = Number(pid);
        ownerWhat = rest.join(' ');
      } catch {
        owner = undefined; // being written; or left half-made by a process that died at once
      }
      const halfMade = owner === undefined && Date.now() - lockMtimeMs(lock) > 10_000;
      if (halfMade || (owner !== undefined && (!Number.isSafeInteger(owner) || !isAlive(owner)))) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new StackError(
          'SCHED_E_STACK_LOCKED',
          `another stack command (pid ${owner}: ${ownerWhat}) has held ${lock} for ${LOCK_WAIT_MS / 60_000} min`,
          `wait for it, or stop pid ${owner}; if no such process runs, remove ${lock}`,
        );
      }
      if (!told && owner !== undefined) {
        ctx.say(`waiting for another stack command (pid ${owner}: ${ownerWhat})…`);
        told = true;
      }
      await sleep(500);
    }
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Starts whatever is not running and waits until every service is healthy: Postgres (and the
 * migrations), then the registry alongside Kafka (and the topics) followed by Connect, with the
 * connector RUNNING and its replication slot active. Returns the endpoints. Idempotent: about
 * half a second when everything is up.
 */
export async function ensureStackUp(options: StackOptions = {}): Promise<StackEndpoints> {
  const ctx = context(options);
  const t0 = Date.now();
  await withLock(ctx, 'up', async () => {
    await checkPrerequisites(ctx);
    // Fetching is a prerequisite too: a failed download leaves nothing half started.
    await ctx.distributions();
    await START.postgres(ctx);
    // Connect needs Kafka, not the registry (payloads pass through as bytes): start it as soon
    // as the broker answers, while the registry may still be starting.
    await Promise.all([START.registry(ctx), START.kafka(ctx).then(() => START.connect(ctx))]);
  });
  ctx.say(`up: every service healthy in ${secs(t0)}`);
  return ctx.endpoints;
}

/**
 * Every check that can fail before anything starts: free ports for the services not already
 * ours, Java 17+ / 21+, PostgreSQL binaries, Maven (only when something must be fetched).
 */
async function checkPrerequisites(ctx: StackContext): Promise<void> {
  for (const name of SERVICES) {
    if (name === 'postgres' && !ctx.ownPostgres) continue;
    if (servicePid(ctx, name) === undefined) await requireServicePorts(ctx, name);
  }
  ctx.javaForKafka();
  if (servicePid(ctx, 'registry') === undefined) ctx.javaForRegistry();
  if (ctx.ownPostgres && servicePid(ctx, 'postgres') === undefined) ctx.pgBinaries();
}

export interface StackStatus {
  healthy: boolean;
  services: ServiceStatus[];
  endpoints: StackEndpoints;
}

/** The health of every service, checked concurrently; `healthy` only if all are. */
export async function stackStatus(options: StackOptions = {}): Promise<StackStatus> {
  const ctx = context(options);
  const services = await Promise.all(SERVICES.map((name) => serviceStatus(ctx, name)));
  return { healthy: services.every((s) => s.healthy), services, endpoints: ctx.endpoints };
}

export interface DownOptions extends StackOptions {
  /**
   * Also drop the replication slot (and reset the connector's stored offsets, so the next `up`
   * starts cleanly from a new slot). By default the slot is kept: outbox rows committed while
   * Connect is down are then still published after the next `up`, and since `down` stops the
   * stack's own Postgres too, no WAL piles up behind it. With DATABASE_URL pointing at a server
   * that keeps running, a kept slot retains that server's WAL until the next `up`.
   */
  dropSlot?: boolean;
}

/** Stops what `up` started, in reverse order: Connect, then the registry and Kafka, then Postgres. */
export async function stackDown(options: DownOptions = {}): Promise<void> {
  const ctx = context(options);
  const t0 = Date.now();
  await withLock(ctx, 'down', async () => {
    if (options.dropSlot && servicePid(ctx, 'connect') !== undefined) {
      await resetConnectorOffsets(ctx.endpoints.connectUrl).then(
        () =>
          ctx.say(
            `connect: connector ${CONNECTOR_NAME} stopped and its offsets reset (the next up resumes it)`,
          ),
        (err: Error) =>
          ctx.say(`connect: could not reset the offsets (${err.message}); the next up resets them if needed`),
      );
    }
    ctx.say(`connect: ${await stopServiceProcess(ctx, 'connect')}`);
    const slot = await slotInfo(ctx.endpoints.databaseUrl, SLOT_NAME).catch(() => undefined);
    if (options.dropSlot) {
      const dropped = await dropSlot(ctx.endpoints.databaseUrl, SLOT_NAME).catch(
        (err: Error) => `not reachable (${err.message})`,
      );
      ctx.say(
        `postgres: replication slot ${SLOT_NAME} ${dropped === 'active' ? 'still active (someone else reads it): kept' : dropped}`,
      );
    } else if (slot?.exists) {
      ctx.say(
        `postgres: replication slot ${SLOT_NAME} kept (lag ${formatBytes(slot.lagBytes)}); \`down --drop-slot\` drops it`,
      );
    }
    const [registry, kafka] = await Promise.all([
      stopServiceProcess(ctx, 'registry'),
      stopServiceProcess(ctx, 'kafka'),
    ]);
    ctx.say(`registry: ${registry}`);
    ctx.say(`kafka: ${kafka}`);
    ctx.say(`postgres: ${await stopServiceProcess(ctx, 'postgres')}`);
  });
  ctx.say(`down: done in ${secs(t0)}`);
}

/** Stops one service (Postgres given by DATABASE_URL is never stopped). */
export async function stopService(name: ServiceName, options: StackOptions = {}): Promise<void> {
  const ctx = context(options);
  await withLock(ctx, `stop ${name}`, () => stopIn(ctx, name));
}

/**
 * Starts one service and waits until it is healthy. The services it depends on must be up
 * (Connect needs Postgres and Kafka; the registry needs Postgres with SQL storage).
 */
export async function startService(name: ServiceName, options: StackOptions = {}): Promise<void> {
  const ctx = context(options);
  await withLock(ctx, `start ${name}`, () => startIn(ctx, name));
}

/**
 * Stop then start one service under one lock (so no other stack command sees it half done):
 * what tests use to restart Kafka or Connect mid-run.
 */
export async function restartService(name: ServiceName, options: StackOptions = {}): Promise<void> {
  const ctx = context(options);
  await withLock(ctx, `restart ${name}`, async () => {
    await stopIn(ctx, name);
    await startIn(ctx, name);
  });
}

async function stopIn(ctx: StackContext, name: ServiceName): Promise<void> {
  ctx.say(`${name}: ${await stopServiceProcess(ctx, name)}`);
}

async function startIn(ctx: StackContext, name: ServiceName): Promise<void> {
  const needs: Record<ServiceName, ServiceName[]> = {
    postgres: [],
    kafka: [],
    registry: ctx.s.registryStorage === 'sql' ? ['postgres'] : [],
    connect: ['postgres', 'kafka'],
  };
  for (const dep of needs[name]) {
    const st = await serviceStatus(ctx, dep);
    if (!st.healthy) {
      throw new StackError(
        'SCHED_E_STACK_START_FAILED',
        `${name} needs ${dep}, which is not healthy (${st.detail})`,
        'start the whole stack: npm run stack -- up',
        true,
      );
    }
  }
  await START[name](ctx);
}
