import { randomUUID } from 'node:crypto';
import {
  Contracts,
  type CommandInput,
  type CreateJobInput,
  type Dispatch,
  type UpsertScheduleInput,
} from '@sched/contracts';
import {
  kafkajsPort,
  type GroupConsumer,
  type InboundMessage,
  type KafkaPort,
  type MessageProducer,
} from '@sched/kafka';
import { recordingLogger } from '@sched/logging';
import { endpoints, uniqueName } from './isolation.js';

let sharedContracts: Contracts | null = null;

/** The Avro contracts, registered once per test process. */
export async function contracts(): Promise<Contracts> {
  if (!sharedContracts) {
    sharedContracts = new Contracts({ registryUrl: endpoints().registryUrl });
    await sharedContracts.registerAll();
  }
  return sharedContracts;
}

/** Warnings and errors of the test process's own Kafka clients (the last 200), for failure reports. */
const clientWarnings: string[] = [];
const clientLogger = recordingLogger(clientWarnings);

export function kafkaClientWarnings(): readonly string[] {
  return clientWarnings;
}

export function kafka(): KafkaPort {
  return kafkajsPort({
    clientId: uniqueName('test'),
    brokers: endpoints().kafkaBrokers,
    logger: clientLogger,
  });
}

export async function ensureTopics(
  topics: { topic: string; partitions: number; config?: Record<string, string> }[],
): Promise<void> {
  const admin = await kafka().admin();
  try {
    await admin.ensureTopics(topics);
  } finally {
    await admin.disconnect();
  }
}

export function createJob(
  jobId: string,
  queue: string,
  dueAtMs: number,
  extra: Partial<CreateJobInput> = {},
): CommandInput {
  return {
    commandId: randomUUID(),
    tenantId: 'default',
    issuedAtMs: Date.now(),
    body: {
      kind: 'CreateJob',
      value: { jobId, queue, dueAtMs, payload: Buffer.from(JSON.stringify({ jobId })), ...extra },
    },
  };
}

export function upsertSchedule(
  scheduleId: string,
  queue: string,
  rule: Partial<UpsertScheduleInput>,
  payload = Buffer.from('{}'),
): CommandInput {
  return {
    commandId: randomUUID(),
    tenantId: 'default',
    issuedAtMs: Date.now(),
    body: {
      kind: 'UpsertSchedule',
      value: { scheduleId, queue, timeZone: 'UTC', jobTemplate: { payload }, ...rule },
    },
  };
}

export function scheduleCommand(
  kind: 'PauseSchedule' | 'ResumeSchedule' | 'DeleteSchedule',
  scheduleId: string,
): CommandInput {
  return {
    commandId: randomUUID(),
    tenantId: 'default',
    issuedAtMs: Date.now(),
    body: { kind, value: { scheduleId, reason: null } },
  };
}

export function cancelJob(jobId: string): CommandInput {
  return {
    commandId: randomUUID(),
    tenantId: 'default',
    issuedAtMs: Date.now(),
    body: { kind: 'CancelJob', value: { jobId, reason: 'test' } },
  };
}

export function rescheduleJob(jobId: string, dueAtMs: number): CommandInput {
  return {
    commandId: randomUUID(),
    tenantId: 'default',
    issuedAtMs: Date.now(),
    body: { kind: 'RescheduleJob', value: { jobId, dueAtMs, expectedVersion: null } },
  };
}

/** Produces commands keyed by their job id, in batches. */
export class CommandProducer {
  private constructor(
    private readonly producer: MessageProducer,
    private readonly c: Contracts,
    readonly topic: string,
  ) {}

  static async open(topic: string): Promise<CommandProducer> {
    return new CommandProducer(await kafka().producer({ idempotent: true }), await contracts(), topic);
  }

  async send(commands: CommandInput[], batch = 2_000): Promise<void> {
    for (let i = 0; i < commands.length; i += batch) {
      await this.producer.send(
        this.topic,
        commands.slice(i, i + batch).map((cmd) => ({ key: keyOf(cmd), value: this.c.encodeCommand(cmd) })),
      );
    }
  }

  /** Raw bytes, for bad-input tests. */
  async sendRaw(messages: { key: string | null; value: Buffer }[]): Promise<void> {
    await this.producer.send(this.topic, messages);
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}

export function keyOf(cmd: CommandInput): string {
  const v = cmd.body.value as { jobId?: string; scheduleId?: string };
  return v.jobId ?? v.scheduleId ?? '';
}

export interface SeenDispatch {
  record: Dispatch;
  message: InboundMessage;
  receivedAtMs: number;
}

/** Consumes topics from the beginning in a group of its own and keeps what it sees. */
export class Collector {
  readonly seen: SeenDispatch[] = [];
  readonly raw: InboundMessage[] = [];
  private consumer: GroupConsumer | null = null;

  constructor(
    private readonly topics: string[],
    private readonly decode: boolean = true,
  ) {}

  async start(): Promise<this> {
    const c = await contracts();
    this.consumer = kafka().groupConsumer(
      {
        groupId: uniqueName('collector'),
        topics: this.topics,
        fromBeginning: true,
        maxWaitTimeMs: 10,
        sessionTimeoutMs: 10_000,
        heartbeatIntervalMs: 1_000,
      },
      {
        onBatch: async (batch) => {
          const now = Date.now();
          for (const m of batch.messages) {
            this.raw.push(m);
            if (this.decode && m.value)
              this.seen.push({ record: await c.decodeDispatch(m.value), message: m, receivedAtMs: now });
          }
        },
      },
    );
    await this.consumer.start();
    return this;
  }

  /** Waits until `predicate` holds (polling), or throws after `timeoutMs`. */
  async waitFor(predicate: () => boolean, timeoutMs: number, what = 'condition'): Promise<void> {
    const t0 = Date.now();
    while (!predicate()) {
      if (Date.now() - t0 > timeoutMs)
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for ${what} (decoded ${this.seen.length}, raw ${this.raw.length})`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}

export async function sleep(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` every 100 ms until it holds, or throws after `timeoutMs` naming `what`. */
export async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * How late the dispatches were claimed (claimedAtMs − dueAtMs): the handoff latency a rebalance
 * or failover test reports (median, p99, worst), as a line for its log.
 */
export function claimLateness(seen: readonly SeenDispatch[]): string {
  const late = seen.map((d) => d.record.claimedAtMs - d.record.dueAtMs).sort((a, b) => a - b);
  if (late.length === 0) return 'no dispatch';
  const q = (p: number) => late[Math.min(late.length - 1, Math.floor(p * late.length))]!;
  return `due → claim p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${late[late.length - 1]} ms over ${late.length} dispatches`;
}

/** The sum of a topic's end offsets: how many records it has ever had (a test's "nothing was sent"). */
export async function recordsOn(topic: string): Promise<number> {
  const admin = await kafka().admin();
  try {
    return [...(await admin.endOffsets(topic)).values()].reduce((a, b) => a + b, 0);
  } finally {
    await admin.disconnect();
  }
}
