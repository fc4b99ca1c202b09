import { stackStatus } from '@sched/local-stack';
import { isolatedSchema, uniqueName, type IsolatedSchema } from './isolation.js';
import { Collector, CommandProducer, ensureTopics, kafkaClientWarnings } from './kafka.js';
import { startApp, startScheduler, type SchedulerProcess } from './app-process.js';

/**
 * One isolated world for a test: its own schema (outbox published to Debezium), its own command
 * topic and consumer group, its own queue (so its own dispatch topic), scheduler processes, a
 * command producer and a dispatch collector.
 */
export class Scenario {
  readonly schedulers: SchedulerProcess[] = [];
  readonly workers: SchedulerProcess[] = [];
  producer!: CommandProducer;
  collector!: Collector;

  private constructor(
    readonly db: IsolatedSchema,
    readonly queue: string,
    readonly commandsTopic: string,
    readonly groupId: string,
    readonly partitions: number,
  ) {}

  get rejectedTopic(): string {
    return `t.${this.db.schema}.rejected`;
  }

  get dispatchTopic(): string {
    return `sched.dispatch.${this.queue}`;
  }

  /**
   * `topicConfig`: topic-level settings of the scenario's command and rejected topics (the broker's
   * defaults otherwise), e.g. `max.message.bytes`.
   */
  static async create(
    name: string,
    partitions = 4,
    topicConfig: { commands?: Record<string, string>; rejected?: Record<string, string> } = {},
  ): Promise<Scenario> {
    const db = await isolatedSchema(name);
    const queue = db.schema.replace(/_/g, '-');
    await db.pool.query('INSERT INTO queue (queue) VALUES ($1)', [queue]);
    const s = new Scenario(db, queue, `t.${db.schema}.commands`, `${db.schema}-sched`, partitions);
    await ensureTopics([
      { topic: s.commandsTopic, partitions, config: topicConfig.commands },
      { topic: s.dispatchTopic, partitions: 4 },
      { topic: `t.${db.schema}.rejected`, partitions: 1, config: topicConfig.rejected },
    ]);
    s.producer = await CommandProducer.open(s.commandsTopic);
    s.collector = await new Collector([s.dispatchTopic]).start();
    return s;
  }

  /** Starts one more scheduler process in this scenario's group. */
  async startScheduler(env: Record<string, string> = {}): Promise<SchedulerProcess> {
    const p = await startScheduler({
      SCHED_DB_SCHEMA: this.db.schema,
      SCHED_COMMANDS_TOPIC: this.commandsTopic,
      SCHED_GROUP_ID: this.groupId,
      SCHED_REJECTED_TOPIC: this.rejectedTopic,
      SCHED_OWNER_ID: uniqueName('owner'),
      ...env,
    });
    this.schedulers.push(p);
    return p;
  }

  /** Starts a real worker process running the test handlers on this scenario's queue. */
  async startWorker(env: Record<string, string> = {}): Promise<SchedulerProcess> {
    const p = await startApp('worker', {
      SCHED_DB_SCHEMA: this.db.schema,
      SCHED_COMMANDS_TOPIC: this.commandsTopic,
      SCHED_WORKER_GROUP_ID: `${this.db.schema}-workers`,
      SCHED_WORKER_ID: uniqueName('worker'),
      SCHED_WORKER_HANDLERS: 'test/src/fixtures/test-handlers.ts',
      TEST_QUEUE: this.queue,
      ...env,
    });
    this.workers.push(p);
    return p;
  }

  /** Executions recorded by the test handlers. */
  async executions(jobId?: string) {
    const { rows } = await this.db.pool
      .query<{
        job_id: string;
        attempt: number;
        worker_id: string;
        generation: number;
        started_ms: number;
        finished_ms: number;
        outcome: string;
        from_step: number;
      }>(
        `SELECT * FROM test_execution ${jobId ? 'WHERE job_id = $1' : ''} ORDER BY started_ms, finished_ms`,
        jobId ? [jobId] : [],
      )
      .catch(() => ({ rows: [] }));
    return rows;
  }

  async jobStates(): Promise<Map<string, string>> {
    const { rows } = await this.db.pool.query<{ job_id: string; state: string }>(
      'SELECT job_id, state FROM job',
    );
    return new Map(rows.map((r) => [r.job_id, r.state]));
  }

  /**
   * What a failing test needs to say where the path stopped: job states in this scenario's schema,
   * the stack's health (with the replication slot's lag), what the collector got, warnings of the test's own Kafka
   * clients and the tail of every app process's log.
   */
  async diagnose(): Promise<string> {
    const part = async (title: string, f: () => Promise<string>) =>
      `--- ${title}\n${await f().catch((err: unknown) => `(could not read: ${String(err)})`)}`;
    const parts = await Promise.all([
      part('job states', async () => {
        const { rows } = await this.db.pool.query<{ state: string; n: string }>(
          'SELECT state, count(*) AS n FROM job GROUP BY state ORDER BY state',
        );
        return rows.map((r) => `${r.state} ${r.n}`).join(', ') || 'no jobs';
      }),
      part('stack', async () => {
        const st = await stackStatus({ say: () => undefined });
        return st.services.map((x) => `${x.name} ${x.healthy ? 'healthy' : 'DOWN'}: ${x.detail}`).join('\n');
      }),
      part(
        'collector',
        async () => `decoded ${this.collector.seen.length}, raw ${this.collector.raw.length}`,
      ),
      part('test Kafka clients (warn+)', async () => kafkaClientWarnings().slice(-30).join('\n') || 'none'),
    ]);
    const apps = [...this.schedulers, ...this.workers].map(
      (p, i) =>
        `--- ${i < this.schedulers.length ? 'scheduler' : 'worker'} pid ${p.pid} (exit ${p.child.exitCode ?? 'running'}), last lines\n${p.output().split('\n').slice(-40).join('\n')}`,
    );
    return [...parts, ...apps].join('\n');
  }

  /** Runs `f`; when it throws, prints `diagnose()` before rethrowing. */
  async explained<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      console.error(`${String(err)}\n${await this.diagnose()}`);
      throw err;
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.workers, ...this.schedulers].map((p) => p.stop()));
    await this.collector?.stop().catch(() => undefined);
    await this.producer?.close().catch(() => undefined);
    await this.db.drop();
  }
}
