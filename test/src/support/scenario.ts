import { isolatedSchema, uniqueName, type IsolatedSchema } from './isolation.js';
import { Collector, CommandProducer, ensureTopics } from './kafka.js';
import { startScheduler, type SchedulerProcess } from './scheduler-process.js';

/**
 * One isolated world for a test: its own schema (outbox published to Debezium), its own command
 * topic and consumer group, its own queue (so its own dispatch topic), scheduler processes, a
 * command producer and a dispatch collector.
 */
export class Scenario {
  readonly schedulers: SchedulerProcess[] = [];
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

  static async create(name: string, partitions = 4): Promise<Scenario> {
    const db = await isolatedSchema(name);
    const queue = db.schema.replace(/_/g, '-');
    await db.pool.query('INSERT INTO queue (queue) VALUES ($1)', [queue]);
    const s = new Scenario(db, queue, `t.${db.schema}.commands`, `${db.schema}-sched`, partitions);
    await ensureTopics([
      { topic: s.commandsTopic, partitions },
      { topic: s.dispatchTopic, partitions: 4 },
      { topic: `t.${db.schema}.rejected`, partitions: 1 },
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

  async jobStates(): Promise<Map<string, string>> {
    const { rows } = await this.db.pool.query<{ job_id: string; state: string }>(
      'SELECT job_id, state FROM job',
    );
    return new Map(rows.map((r) => [r.job_id, r.state]));
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.schedulers.map((p) => p.stop()));
    await this.collector?.stop().catch(() => undefined);
    await this.producer?.close().catch(() => undefined);
    await this.db.drop();
  }
}
