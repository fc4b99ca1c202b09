import { migrate } from '@sched/store';
import pg from 'pg';
import {
  CONNECTOR_NAME,
  OFFSET_GONE,
  connectAnswers,
  connectorConfig,
  connectorState,
  registerConnector,
  resetConnectorOffsets,
  restartFailed,
  setConnectorRunning,
} from './connector.js';
import { startConnect } from './connect-worker.js';
import { pollTimerAgentJar } from './poll-timer-agent.js';
import { recordRouterPluginDir } from './connect-smt.js';
import {
  LABEL,
  redact,
  requireServicePorts,
  secs,
  serviceLog,
  servicePid,
  SLOT_NAME,
  type ServiceName,
  type StackContext,
} from './context.js';
import { StackError } from './errors.js';
import { connectHealth } from './health.js';
import { kafkaHealth, startKafka } from './kafka-broker.js';
import { tailFile } from './log-files.js';
import {
  ensureDatabases,
  pgAnswers,
  postgresPid,
  slotInfo,
  startPostgres,
  stopPostgres,
} from './postgres.js';
import { forgetPid, isAlive, stopPid } from './processes.js';
import { registryHealth, startRegistry, type RegistryStorage } from './registry.js';
import { ownDatabaseUrl, STACK_DB, withDatabase } from './settings.js';
import { dispatchTopic, ensureTopics, STACK_TOPICS, type TopicSpec } from './topics.js';
import { sleep, waitFor } from './wait.js';

/** Starting and stopping each service: idempotent starts that wait for real health, stops of our own processes only. */

function abortIfDead(ctx: StackContext, name: ServiceName, pid: number): () => void {
  return () => {
    if (!isAlive(pid)) {
      const log = serviceLog(ctx, name);
      throw new StackError(
        'SCHED_E_STACK_START_FAILED',
        `${LABEL[name]} (pid ${pid}) exited while starting. Last lines of ${log}:\n${tailFile(log, 20)}`,
        `read ${log}; fix the cause and run \`npm run stack -- up\` again`,
      );
    }
  };
}

/** Starts Postgres (own cluster) if needed, makes the databases and applies the migrations. */
export async function startPostgresService(ctx: StackContext): Promise<void> {
  const t0 = Date.now();
  if (ctx.ownPostgres) {
    if (postgresPid(ctx.s) === undefined) {
      const bin = ctx.pgBinaries();
      await requireServicePorts(ctx, 'postgres');
      const pid = await startPostgres(ctx.s, bin, ctx.say);
      ctx.say(`postgres: started (pid ${pid}, PostgreSQL ${bin.major}, port ${ctx.s.pgPort})`);
    }
  } else if (!(await pgAnswers(ctx.endpoints.databaseUrl))) {
    throw new StackError(
      'SCHED_E_STACK_POSTGRES_FAILED',
      `the Postgres of DATABASE_URL does not answer (${redact(ctx.endpoints.databaseUrl)})`,
      'start that server, or unset DATABASE_URL to let the stack run its own',
      true,
    );
  }
  if (ctx.ownPostgres) await ensureDatabases(ctx.adminUrl(), [STACK_DB.database]);
  const level = await slotInfo(ctx.endpoints.databaseUrl, SLOT_NAME);
  if (level.walLevel !== 'logical') {
    throw new StackError(
      'SCHED_E_STACK_POSTGRES_FAILED',
      `Postgres runs with wal_level=${level.walLevel}; Debezium needs wal_level=logical`,
      'set wal_level=logical (and max_replication_slots, max_wal_senders >= 4) on that server and restart it, or unset DATABASE_URL',
    );
  }
  const result = await migrate(ctx.endpoints.databaseUrl);
  ctx.say(
    `postgres: ready in ${secs(t0)}${result.applied.length ? `, migrations applied: ${result.applied.join(', ')}` : ', migrations up to date'}`,
  );
}

export async function startKafkaService(ctx: StackContext): Promise<void> {
  const t0 = Date.now();
  let pid = servicePid(ctx, 'kafka');
  if (pid === undefined) {
    const java = ctx.javaForKafka();
    await requireServicePorts(ctx, 'kafka');
    const dist = await ctx.distributions();
    pid = startKafka(ctx.s, java.java, dist.kafkaLibDir);
    ctx.say(`kafka: starting (pid ${pid}, Kafka ${dist.versions.kafka}, Java ${java.major})`);
  }
  await waitFor(
    async (why) => {
      const h = await kafkaHealth(ctx.endpoints.kafkaBrokers);
      why(h.detail);
      return h.ok ? true : undefined;
    },
    {
      what: 'Kafka to answer metadata',
      timeoutMs: 90_000,
      fix: `see ${serviceLog(ctx, 'kafka')}`,
      abortIf: abortIfDead(ctx, 'kafka', pid),
    },
  );
  const topics: TopicSpec[] = [...STACK_TOPICS];
  for (const q of await knownQueues(ctx))
    if (!topics.some((t) => t.name === dispatchTopic(q).name)) topics.push(dispatchTopic(q));
  const r = await ensureTopics(ctx.endpoints.kafkaBrokers, topics);
  const notes = [
    r.created.length ? `created ${r.created.join(', ')}` : 'topics present',
    r.grown.length ? `grew ${r.grown.join(', ')}` : '',
    r.larger.length ? `larger than asked: ${r.larger.join(', ')}` : '',
  ].filter(Boolean);
  ctx.say(`kafka: ready in ${secs(t0)} (${notes.join('; ')})`);
}

/** Queues named in the store's `queue` table, so their dispatch topics exist up front (best effort). */
async function knownQueues(ctx: StackContext): Promise<string[]> {
  const client = new pg.Client({
    connectionString: ctx.endpoints.databaseUrl,
    connectionTimeoutMillis: 3000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    const r = await client.query<{ queue: string }>('SELECT queue FROM public.queue');
    return r.rows.map((row) => row.queue);
  } catch {
    return [];
  } finally {
    await client.end().catch(() => {});
  }
}

export async function startRegistryService(ctx: StackContext): Promise<void> {
  const t0 = Date.now();
  let pid = servicePid(ctx, 'registry');
  if (pid === undefined) {
    const java = ctx.javaForRegistry();
    await requireServicePorts(ctx, 'registry');
    const dist = await ctx.distributions();
    const storage = await registryStorage(ctx);
    pid = startRegistry(ctx.s, java.java, dist.apicurioDir, storage);
    ctx.say(
      `registry: starting (pid ${pid}, Apicurio ${dist.versions.apicurio}, Java ${java.major}, ${storage.kind} storage)`,
    );
  }
  await waitFor(
    async (why) => {
      const h = await registryHealth(ctx.endpoints.registryUrl);
      why(h.detail);
      return h.ok ? true : undefined;
    },
    {
      what: 'the schema registry to answer',
      timeoutMs: 120_000,
      fix: `see ${serviceLog(ctx, 'registry')}`,
      abortIf: abortIfDead(ctx, 'registry', pid),
    },
  );
  ctx.say(`registry: ready in ${secs(t0)} (${ctx.endpoints.registryUrl})`);
}

/** SQL storage in database `registry` of the same server; in-memory if that database cannot be made. */
async function registryStorage(ctx: StackContext): Promise<RegistryStorage> {
  if (ctx.s.registryStorage === 'mem') return { kind: 'mem' };
  const url = ctx.ownPostgres
    ? ownDatabaseUrl(ctx.s, STACK_DB.registryDatabase)
    : withDatabase(ctx.endpoints.databaseUrl, STACK_DB.registryDatabase);
  // A busy machine can time one connection out: try a few times before settling for memory.
  for (let attempt = 1; ; attempt++) {
    try {
      await ensureDatabases(ctx.adminUrl(), [STACK_DB.registryDatabase]);
      return { kind: 'sql', databaseUrl: url };
    } catch (err) {
      if (attempt < 4) {
        await new Promise((r) => setTimeout(r, 1_000));
        continue;
      }
      ctx.say(
        `registry: cannot use database ${STACK_DB.registryDatabase} (${(err as Error).message}); using in-memory storage (schema ids reset on restart)`,
      );
      return { kind: 'mem' };
    }
  }
}

export async function startConnectService(ctx: StackContext): Promise<void> {
  const t0 = Date.now();
  let pid = servicePid(ctx, 'connect');
  const startedNow = pid === undefined;
  if (pid === undefined) {
    const java = ctx.javaForKafka();
    await requireServicePorts(ctx, 'connect');
    const dist = await ctx.distributions();
    const agent = pollTimerAgentJar(ctx.s, java.java, ctx.say);
    const router = recordRouterPluginDir(
      ctx.s.cacheDir,
      java.java,
      dist.kafkaLibDir,
      dist.versions.kafka,
      ctx.say,
    );
    pid = startConnect(ctx.s, java.java, dist.kafkaLibDir, `${dist.debeziumPluginPath},${router}`, agent);
    ctx.say(`connect: starting (pid ${pid}, Debezium ${dist.versions.debezium})`);
  }
  const abort = abortIfDead(ctx, 'connect', pid);
  const fix = `see ${serviceLog(ctx, 'connect')}`;
  await waitFor(async () => ((await connectAnswers(ctx.endpoints.connectUrl)) ? true : undefined), {
    what: 'the Connect REST API',
    timeoutMs: 120_000,
    fix,
    abortIf: abort,
  });
  const config = connectorConfig(ctx.endpoints.databaseUrl);
  const registered = await waitFor(
    async (why) => {
      try {
        return await registerConnector(ctx.endpoints.connectUrl, config);
      } catch (err) {
        if (err instanceof StackError && !err.retriable) throw err;
        why((err as Error).message);
        return undefined;
      }
    },
    { what: 'Connect to accept the connector', timeoutMs: 60_000, fix, abortIf: abort },
  );
  if (registered !== 'unchanged') ctx.say(`connect: connector ${CONNECTOR_NAME} ${registered}`);
  // Left STOPPED by `down --drop-slot` (or by hand): run it again.
  const stopped = (await connectorState(ctx.endpoints.connectUrl))?.connector === 'STOPPED';
  if (stopped) {
    await setConnectorRunning(ctx.endpoints.connectUrl, true);
    ctx.say(`connect: connector ${CONNECTOR_NAME} resumed`);
  }
  // Nothing was (re)started by this call: a healthy first look is the answer.
  let settled = !startedNow && registered === 'unchanged' && !stopped;
  let restarted = false;
  let reset = false;
  // Debezium opens its replication stream, closes it and opens it again while starting: the
  // slot counts as active once the same reader holds it on two checks a second apart.
  let reader: number | undefined;
  await waitFor(
    async (why) => {
      const h = await connectHealth(ctx);
      why(h.detail);
      if (h.failed && OFFSET_GONE.test(h.failed) && !reset) {
        // The slot was dropped or invalidated while Connect kept the old LSN: start from the slot.
        reset = true;
        settled = false;
        ctx.say(
          'connect: WARNING the replication slot no longer holds the position Connect stored (slot dropped or ' +
            'invalidated); resetting the connector offsets: outbox rows committed while no slot existed are not published',
        );
        await resetConnectorOffsets(ctx.endpoints.connectUrl);
        await setConnectorRunning(ctx.endpoints.connectUrl, true);
        return undefined;
      }
      if (h.failed) {
        if (restarted) {
          throw new StackError(
            'SCHED_E_STACK_CONNECTOR_FAILED',
            `connector ${CONNECTOR_NAME} failed: ${h.failed.split('\n').slice(0, 6).join('\n')}`,
            `${fix}; the full trace is in GET ${ctx.endpoints.connectUrl}/connectors/${CONNECTOR_NAME}/status`,
          );
        }
        restarted = true;
        ctx.say(`connect: ${h.detail.slice(0, 300)} — restarting the failed task once`);
        await restartFailed(ctx.endpoints.connectUrl);
      }
      if (!h.ok) {
        settled = false;
        reader = undefined;
        return undefined;
      }
      if (settled || (reader !== undefined && reader === h.readerPid)) return true;
      reader = h.readerPid;
      await sleep(1000);
      return undefined;
    },
    {
      what: `connector ${CONNECTOR_NAME} and its task RUNNING with the replication slot active`,
      timeoutMs: 120_000,
      fix,
      abortIf: abort,
    },
  );
  ctx.say(`connect: ready in ${secs(t0)} (${CONNECTOR_NAME} RUNNING, slot ${SLOT_NAME} active)`);
}

export const START: Record<ServiceName, (ctx: StackContext) => Promise<void>> = {
  postgres: startPostgresService,
  kafka: startKafkaService,
  registry: startRegistryService,
  connect: startConnectService,
};

const GRACE_MS: Record<ServiceName, number> = {
  postgres: 30_000,
  kafka: 30_000,
  registry: 15_000,
  connect: 20_000,
};

/** Stops our process for `name` (SIGTERM, then SIGKILL after a grace period); never an external one. */
export async function stopServiceProcess(ctx: StackContext, name: ServiceName): Promise<string> {
  if (name === 'postgres') {
    if (!ctx.ownPostgres) return 'external (DATABASE_URL), left running';
    if (postgresPid(ctx.s) === undefined) return 'not running';
    return stopPostgres(ctx.s, ctx.pgBinaries());
  }
  const pid = servicePid(ctx, name);
  if (pid === undefined) return 'not running';
  const how = await stopPid(pid, GRACE_MS[name]);
  forgetPid(ctx.s.stateDir, name);
  return how === 'killed' ? `killed (pid ${pid}) after ${GRACE_MS[name] / 1000} s` : `stopped (pid ${pid})`;
}
