import { execFile, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DISPATCH_TOPIC_PREFIX,
  POLL_TIMER_AGENT_SOURCE,
  POLL_TIMER_PATCHED_LINE,
  distributionDirs,
  ensureStackUp,
  logFile,
  stackSettings,
  stackStatus,
  startService,
  stopService,
} from '@sched/local-stack';
import { schemaForSuite, uniqueName } from './support/isolation.js';

// The local stack itself: every service healthy, `status` exits non-zero when one is down, and
// the outbox path end to end (a table published after the connector started, bytes and headers intact).

const run = promisify(execFile);
const quiet = { say: (line: string) => console.log(`[stack] ${line}`) };

async function cliStatus(): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run('npx', ['tsx', 'deploy/local/src/cli.ts', 'status'], { timeout: 60_000 });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: e.stdout ?? '' };
  }
}

describe('local stack', () => {
  let endpoints: Awaited<ReturnType<typeof ensureStackUp>>;
  const kafkaOf = () =>
    new Kafka({ clientId: 'stack-health', brokers: endpoints.kafkaBrokers, logLevel: logLevel.NOTHING });
  beforeAll(async () => {
    endpoints = await ensureStackUp(quiet); // idempotent: seconds when `npm test` already ran `up`
  });

  it('reports every service healthy, with the replication slot active', async () => {
    const st = await stackStatus(quiet);
    expect(st.services.map((s) => [s.name, s.healthy, s.detail])).toEqual(
      st.services.map((s) => [s.name, true, s.detail]),
    );
    expect(st.services.find((s) => s.name === 'connect')?.detail).toMatch(
      /RUNNING, task 0 RUNNING, slot active/,
    );
    expect(st.services.find((s) => s.name === 'postgres')?.detail).toMatch(
      /wal_level=logical; slot sched_outbox active/,
    );
    const cli = await cliStatus();
    expect(cli.code).toBe(0);
    expect(cli.out.split('\n').filter((l) => / healthy /.test(l))).toHaveLength(4);
  });

  describe('an outbox row in a schema published after the connector started', () => {
    const db = schemaForSuite('t_stack'); // migrates, then ALTER PUBLICATION sched_outbox ADD TABLE

    it('arrives on sched.dispatch.<queue> with the same key, value bytes and headers', async () => {
      const queue = uniqueName('stack').replace(/_/g, '-');
      const topic = `${DISPATCH_TOPIC_PREFIX}${queue}`;
      const id = randomUUID();
      // Confluent framing (magic 0, schema id 7) then bytes that are not valid UTF-8.
      const payload = Buffer.from([0x00, 0x00, 0x00, 0x00, 0x07, 0xff, 0xfe, 0x00, 0x80, 0x01]);
      await db().pool.query(
        `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, job_id, version, attempt, epoch, tenant_id)
         VALUES ($1, $2, $3, 'JobDue', $4, $3, 3, 2, 9007199254740, 'tenant-a')`,
        [id, `dispatch.${queue}`, `job-${id}`, payload],
      );

      const kafka = kafkaOf();
      const admin = kafka.admin();
      await admin.connect();
      const deadline = Date.now() + 30_000;
      while (!(await admin.listTopics()).includes(topic)) {
        if (Date.now() > deadline) throw new Error(`Debezium did not create ${topic} within 30 s`);
        await new Promise((r) => setTimeout(r, 200));
      }
      await admin.disconnect();

      const consumer = kafka.consumer({ groupId: uniqueName('stack-health'), maxWaitTimeInMs: 100 });
      await consumer.connect();
      try {
        await consumer.subscribe({ topic, fromBeginning: true });
        const message = await new Promise<KafkaMessage>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`nothing on ${topic} within 30 s`)), 30_000);
          void consumer.run({
            eachMessage: async ({ message: m }) => {
              clearTimeout(timer);
              resolve(m);
            },
          });
        });
        expect(message.key?.toString()).toBe(`job-${id}`);
        expect(message.value?.equals(payload)).toBe(true);
        const h = (name: string): string | undefined => message.headers?.[name]?.toString();
        expect({
          id: h('id'),
          eventType: h('eventType'),
          jobId: h('jobId'),
          version: h('version'),
          attempt: h('attempt'),
          epoch: h('epoch'),
          tenantId: h('tenantId'),
        }).toEqual({
          id,
          eventType: 'JobDue',
          jobId: `job-${id}`,
          version: '3',
          attempt: '2',
          epoch: '9007199254740',
          tenantId: 'tenant-a',
        });
      } finally {
        await consumer.disconnect();
      }
    });
  });

  it('the slot keeps up with WAL that other databases write (the heartbeat action query)', async () => {
    // Without a captured change now and then the slot's confirmed position stays where the last
    // outbox row left it while other databases write, and the cluster keeps all that WAL.
    const other = new URL(endpoints.databaseUrl);
    other.pathname = '/postgres';
    const client = new pg.Client({ connectionString: other.toString() });
    const ours = new pg.Client({ connectionString: endpoints.databaseUrl });
    await client.connect();
    await ours.connect();
    try {
      const since = (await ours.query<{ t: Date }>('SELECT now() AS t')).rows[0]!.t;
      const table = uniqueName('t_wal');
      await client.query(`CREATE TABLE ${table} (n int, pad text)`);
      await client.query(`INSERT INTO ${table} SELECT n, repeat('x', 200) FROM generate_series(1, 20000) n`);
      await client.query(`DROP TABLE ${table}`);
      const written = (await client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'))
        .rows[0]!.lsn;
      // Debezium beats every 10 s (heartbeat.interval.ms); Connect flushes offsets every second.
      const deadline = Date.now() + 40_000;
      let behind = Number.NaN;
      for (;;) {
        const r = await client.query<{ behind: string }>(
          `SELECT pg_wal_lsn_diff($1::pg_lsn, confirmed_flush_lsn)::text AS behind
             FROM pg_replication_slots WHERE slot_name = 'sched_outbox'`,
          [written],
        );
        behind = Number(r.rows[0]?.behind ?? Number.NaN);
        if (behind <= 0 || Date.now() > deadline) break;
        await new Promise((res) => setTimeout(res, 500));
      }
      expect(behind).toBeLessThanOrEqual(0);
      // It was the beat: the row was rewritten meanwhile, and its changes never reached Kafka.
      const beat = await ours.query<{ fresh: boolean }>(
        'SELECT beat_at > $1 AS fresh FROM sched_cdc.heartbeat',
        [since],
      );
      expect(beat.rows).toEqual([{ fresh: true }]);
      // The beat's table has a key: without one Debezium logs a WARN ("Primary keys are not defined
      // for table 'heartbeat'") each time it reads the table's description, about once a minute.
      const key = await ours.query('SELECT 1 FROM pg_index WHERE indrelid = $1::regclass AND indisprimary', [
        'sched_cdc.heartbeat',
      ]);
      expect(key.rowCount).toBe(1);
      // `status` shows the beat's age (a stopped beat is otherwise only an ERROR line in connect.log).
      const st = await stackStatus(quiet);
      expect(st.services.find((x) => x.name === 'postgres')?.detail).toMatch(/, heartbeat \d+ s ago$/);
      const admin = kafkaOf().admin();
      await admin.connect();
      try {
        expect(
          (await admin.listTopics()).filter(
            (t) => t.includes('heartbeat') && t !== '__debezium-heartbeat.sched',
          ),
        ).toEqual([]);
      } finally {
        await admin.disconnect();
      }
    } finally {
      await client.end();
      await ours.end();
    }
  }, 60_000);

  it('Connect runs with the poll-timer agent, which found and patched Debezium’s timer', () => {
    // Without it Debezium's queue spins through the last millisecond of every poll interval
    // (~18 % of a core while idle, see deploy/local/java/PollTimerAgent.java).
    const s = stackSettings(process.env);
    const dir = join(distributionDirs(s).debeziumPluginPath, 'debezium-connector-postgres');
    const utilJar = readdirSync(dir).find((f) => /^debezium-util-.+\.jar$/.test(f));
    expect(utilJar).toBeDefined();
    const java = s.javaHome ? join(s.javaHome, 'bin', 'java') : 'java';
    const check = spawnSync(java, [POLL_TIMER_AGENT_SOURCE, '--check', join(dir, utilJar!)], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(check.stdout.trim()).toBe('patchable: io/debezium/util/Threads$2');
    // The running JVM has the agent, and its log since that start says it patched the class (the
    // log is appended to across restarts: look only after the last start's line).
    const pid = readFileSync(join(s.stateDir, 'pids', 'connect.pid'), 'utf8').trim();
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline.some((a) => /^-javaagent:.*poll-timer-agent\.jar$/.test(a))).toBe(true);
    const log = readFileSync(logFile(s.stateDir, 'connect'), 'utf8');
    const lastStart = log.lastIndexOf('[poll-timer-agent] installed');
    expect(lastStart).toBeGreaterThanOrEqual(0);
    expect(log.indexOf(POLL_TIMER_PATCHED_LINE, lastStart)).toBeGreaterThan(lastStart);
  });

  it('`status` exits non-zero while a service is down, and zero once it is back', async () => {
    await stopService('registry', quiet);
    try {
      const down = await cliStatus();
      expect(down.code).toBe(1);
      expect(down.out).toMatch(/^registry +DOWN /m);
    } finally {
      await startService('registry', quiet);
    }
    expect((await cliStatus()).code).toBe(0);
  });
});
