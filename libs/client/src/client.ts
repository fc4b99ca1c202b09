import { randomUUID } from 'node:crypto';
import {
  CommandRejection,
  DEFAULT_VALIDATION_LIMITS,
  toEngine,
  validateCommand,
  type KnownNames,
  type ValidationLimits,
} from '@sched/command-rules';
import {
  Contracts,
  isContractsError,
  RejectionReason,
  TOPICS,
  type CommandBodyInput,
  type CommandInput,
  type DstRepeatedPolicy,
  type DstSkippedPolicy,
  type JobEvent,
  type JobEventType,
  type MisfirePolicy,
  type OverlapPolicy,
  type RetryPolicyInput,
} from '@sched/contracts';
import {
  kafkajsPort,
  RecordTooLargeError,
  type GroupConsumer,
  type KafkaPort,
  type MessageProducer,
} from '@sched/kafka';
import { createLogger, type Logger } from '@sched/logging';
import { CommandRefusedError, WaitTimeoutError } from './client-error.js';

export interface SchedulerClientOptions {
  /** Kafka bootstrap servers, `host:port`. */
  brokers: string[];
  /** The schema registry (Confluent API), e.g. `http://127.0.0.1:8081`. */
  registryUrl: string;
  /** The tenant every command is issued for. */
  tenantId: string;
  /** Recorded on every command and on the lifecycle events it causes ("who cancelled this"). */
  callerId?: string;
  /** Kafka client id; default `sched-client`. */
  clientId?: string;
  /** Default `sched.commands`. */
  commandsTopic?: string;
  /** Default `sched.events`. */
  eventsTopic?: string;
  /**
   * The scheduler's limits, if its configuration changed them (`SCHED_MAX_PAYLOAD_BYTES`, …): a
   * command beyond them is refused here instead of rejected there.
   */
  limits?: Partial<ValidationLimits>;
  /** The queues that exist: a command naming another is refused (UNKNOWN_QUEUE). Unchecked if absent. */
  queues?: readonly string[];
  /**
   * Follow the events topic from `connect` on, so `waitFor` sees every event from then. Without it
   * the first `waitFor` starts following, and sees only events after that.
   */
  watchEvents?: boolean;
  /** Another Kafka adapter behind our port (default: kafkajs). */
  kafka?: KafkaPort;
  /** The Kafka client's warnings and errors go here; default JSON lines on stdout at `warn`. */
  logger?: Logger;
}

/** An instant: a Date, epoch milliseconds, or an ISO-8601 string with its offset. */
export type Instant = Date | number | string;

export interface JobSpec {
  /** Default: a random UUID. Creating the same id twice is one job (the second is a no-op). */
  jobId?: string;
  queue: string;
  dueAt: Instant;
  /** Bytes are sent as they are; anything else is sent as JSON. */
  payload?: unknown;
  /** -1000..1000; higher is claimed first among jobs due together. */
  priority?: number;
  businessKey?: string;
  maxAttempts?: number;
  retryPolicy?: RetryPolicyInput;
  /** Spread the start over [dueAt, dueAt + window] (deterministic per job id). */
  jitterWindowMs?: number;
  /** Not started by then: EXPIRED instead of run late. */
  expiresAt?: Instant;
  executionTimeoutMs?: number;
  headers?: Record<string, string>;
}

export interface ScheduleSpec {
  scheduleId: string;
  queue: string;
  cron?: string;
  intervalMs?: number;
  /** IANA zone the cron is read in; default UTC. */
  timeZone?: string;
  startAt?: Instant;
  endAt?: Instant;
  maxRuns?: number;
  misfirePolicy?: MisfirePolicy;
  misfireFireAllCap?: number;
  misfireDeadlineMs?: number;
  overlapPolicy?: OverlapPolicy;
  dstSkippedPolicy?: DstSkippedPolicy;
  dstRepeatedPolicy?: DstRepeatedPolicy;
  jitterWindowMs?: number;
  expectedVersion?: number;
  /** The job each occurrence creates. */
  payload?: unknown;
  priority?: number;
  headers?: Record<string, string>;
  maxAttempts?: number;
  executionTimeoutMs?: number;
  retryPolicy?: RetryPolicyInput;
}

/** What a sent command is known by: its id (for `GET /v1/commands/:id`) and the entity it names. */
export interface CommandReceipt {
  commandId: string;
  jobId?: string;
  scheduleId?: string;
}

const JOB_FIELDS = new Set<string>([
  'jobId',
  'queue',
  'dueAt',
  'payload',
  'priority',
  'businessKey',
  'maxAttempts',
  'retryPolicy',
  'jitterWindowMs',
  'expiresAt',
  'executionTimeoutMs',
  'headers',
]);
const SCHEDULE_FIELDS = new Set<string>([
  'scheduleId',
  'queue',
  'cron',
  'intervalMs',
  'timeZone',
  'startAt',
  'endAt',
  'maxRuns',
  'misfirePolicy',
  'misfireFireAllCap',
  'misfireDeadlineMs',
  'overlapPolicy',
  'dstSkippedPolicy',
  'dstRepeatedPolicy',
  'jitterWindowMs',
  'expectedVersion',
  'payload',
  'priority',
  'headers',
  'maxAttempts',
  'executionTimeoutMs',
  'retryPolicy',
]);

/** Events remembered for `waitFor`, by job (the oldest jobs are forgotten first). */
const REMEMBERED_JOBS = 100_000;

interface Waiter {
  states: ReadonlySet<string>;
  resolve(event: JobEvent): void;
}

/**
 * The producer side of the platform: a service sends job and schedule commands straight to Kafka,
 * Avro through the registry, keyed by the job or schedule id, from an idempotent acks=all producer.
 * Each command gets its own id, so a command sent twice (a retry) is applied once. A call resolves
 * once the broker has acknowledged; the scheduler applies the command after that (`waitFor`, or the
 * API's `GET /v1/commands/:id`, tells when).
 *
 * Every command is checked before it is sent with the scheduler's own rules (`@sched/command-rules`,
 * after the same Avro encoding and decoding): one that the scheduler would reject is refused with
 * `CommandRefusedError` and nothing is sent. Needs Kafka and the registry, not Postgres.
 */
export class SchedulerClient {
  private readonly limits: ValidationLimits;
  private readonly names: KnownNames;
  private readonly commandsTopic: string;
  private readonly eventsTopic: string;
  private events: GroupConsumer | null = null;
  private eventsReady: Promise<void> | null = null;
  private readonly seen = new Map<string, JobEvent[]>();
  private readonly waiters = new Map<string, Waiter[]>();
  private closed = false;

  private constructor(
    private readonly options: SchedulerClientOptions,
    private readonly kafka: KafkaPort,
    private readonly contracts: Contracts,
    private readonly producer: MessageProducer,
  ) {
    this.limits = { ...DEFAULT_VALIDATION_LIMITS, ...options.limits };
    const queues = options.queues ? new Set(options.queues) : null;
    this.names = { hasQueue: (q) => queues === null || queues.has(q), hasTenant: () => true };
    this.commandsTopic = options.commandsTopic ?? TOPICS.commands;
    this.eventsTopic = options.eventsTopic ?? TOPICS.events;
  }

  /** Registers the contract schemas (an existing identical schema keeps its id) and connects. */
  static async connect(options: SchedulerClientOptions): Promise<SchedulerClient> {
    if (!options.tenantId) throw new TypeError('SchedulerClient: tenantId is required');
    const kafka =
      options.kafka ??
      kafkajsPort({
        clientId: options.clientId ?? 'sched-client',
        brokers: options.brokers,
        logger: options.logger ?? createLogger('sched-client', { level: 'warn' }),
      });
    const contracts = new Contracts({ registryUrl: options.registryUrl });
    await contracts.registerAll();
    const producer = await kafka.producer({ idempotent: true });
    const client = new SchedulerClient(options, kafka, contracts, producer);
    if (options.watchEvents) await client.watch();
    return client;
  }

  /** Creates one job. */
  async createJob(job: JobSpec): Promise<CommandReceipt & { jobId: string }> {
    const [receipt] = await this.createJobs([job]);
    return receipt!;
  }

  /** Creates jobs in one send; if any one would be rejected, none is sent. */
  async createJobs(jobs: readonly JobSpec[]): Promise<(CommandReceipt & { jobId: string })[]> {
    if (!Array.isArray(jobs) || jobs.length === 0)
      throw new CommandRefusedError(RejectionReason.INVALID_FIELD, 'createJobs needs at least one job');
    const bodies = jobs.map((job, i): CommandBodyInput => {
      unknownFields(job, JOB_FIELDS, i, jobs.length);
      return {
        kind: 'CreateJob',
        // Fields left out take the contract's defaults (the Avro schema's), as on every producer.
        value: defined({
          jobId: job.jobId ?? randomUUID(),
          queue: job.queue,
          dueAtMs: instant('dueAt', job.dueAt, RejectionReason.DUE_AT_OUT_OF_RANGE, position(i, jobs.length)),
          payload: payloadBytes(job.payload),
          priority: job.priority,
          businessKey: job.businessKey,
          maxAttempts: job.maxAttempts,
          retryPolicy: job.retryPolicy,
          jitterWindowMs: job.jitterWindowMs,
          expiresAtMs:
            job.expiresAt === undefined
              ? undefined
              : instant('expiresAt', job.expiresAt, RejectionReason.INVALID_FIELD, position(i, jobs.length)),
          executionTimeoutMs: job.executionTimeoutMs,
          headers: job.headers,
        }),
      };
    });
    const sent = await this.send(bodies);
    return sent.map((s) => ({ commandId: s.commandId, jobId: s.entityId }));
  }

  /** Cancels a job that has not finished (a running one is told through its lease). */
  async cancelJob(jobId: string, options: { reason?: string } = {}): Promise<CommandReceipt> {
    const [s] = await this.send([{ kind: 'CancelJob', value: { jobId, reason: options.reason ?? null } }]);
    return { commandId: s!.commandId, jobId };
  }

  /** Moves a job's due time; with `expectedVersion`, only if the job is still at that version. */
  async rescheduleJob(
    jobId: string,
    dueAt: Instant,
    options: { expectedVersion?: number } = {},
  ): Promise<CommandReceipt> {
    const dueAtMs = instant('dueAt', dueAt, RejectionReason.DUE_AT_OUT_OF_RANGE, 0);
    const [s] = await this.send([
      {
        kind: 'RescheduleJob',
        value: { jobId, dueAtMs, expectedVersion: options.expectedVersion ?? null },
      },
    ]);
    return { commandId: s!.commandId, jobId };
  }

  /** Creates or replaces a recurring schedule: a cron (in its zone, with DST policies) or an interval. */
  async upsertSchedule(spec: ScheduleSpec): Promise<CommandReceipt> {
    unknownFields(spec, SCHEDULE_FIELDS, 0, 1);
    const opt = (what: string, v: Instant | undefined) =>
      v === undefined ? undefined : instant(what, v, RejectionReason.INVALID_SCHEDULE_WINDOW, 0);
    const [s] = await this.send([
      {
        kind: 'UpsertSchedule',
        value: defined({
          scheduleId: spec.scheduleId,
          queue: spec.queue,
          cron: spec.cron,
          intervalMs: spec.intervalMs,
          timeZone: spec.timeZone ?? 'UTC',
          startAtMs: opt('startAt', spec.startAt),
          endAtMs: opt('endAt', spec.endAt),
          maxRuns: spec.maxRuns,
          misfirePolicy: spec.misfirePolicy,
          misfireFireAllCap: spec.misfireFireAllCap,
          misfireDeadlineMs: spec.misfireDeadlineMs,
          overlapPolicy: spec.overlapPolicy,
          dstSkippedPolicy: spec.dstSkippedPolicy,
          dstRepeatedPolicy: spec.dstRepeatedPolicy,
          jitterWindowMs: spec.jitterWindowMs,
          expectedVersion: spec.expectedVersion,
          jobTemplate: defined({
            payload: payloadBytes(spec.payload),
            priority: spec.priority,
            headers: spec.headers,
            maxAttempts: spec.maxAttempts,
            executionTimeoutMs: spec.executionTimeoutMs,
            retryPolicy: spec.retryPolicy,
          }),
        }),
      },
    ]);
    return { commandId: s!.commandId, scheduleId: spec.scheduleId };
  }

  async pauseSchedule(scheduleId: string, options: { reason?: string } = {}): Promise<CommandReceipt> {
    return this.scheduleState('PauseSchedule', scheduleId, options.reason);
  }

  async resumeSchedule(scheduleId: string, options: { reason?: string } = {}): Promise<CommandReceipt> {
    return this.scheduleState('ResumeSchedule', scheduleId, options.reason);
  }

  /** Deletes a schedule; jobs it already created keep running. */
  async deleteSchedule(scheduleId: string, options: { reason?: string } = {}): Promise<CommandReceipt> {
    return this.scheduleState('DeleteSchedule', scheduleId, options.reason);
  }

  /**
   * Resolves with the first lifecycle event of `jobId` whose type is one of `states`, seen on the
   * events topic since the client started following it (`watchEvents`, or the first `waitFor`).
   * Rejects with WaitTimeoutError after `timeoutMs` (default 30 s).
   *
   * The platform writes `CANCELLED`, `RESCHEDULED`, `EXPIRED`, `RETRY_SCHEDULED` and
   * `DEAD_LETTERED`; `SUCCEEDED` only from workers started with `SCHED_WORKER_LIFECYCLE_EVENTS=all`
   * (an outbox row per job). A create has no event: ask `GET /v1/commands/:commandId` for that.
   */
  async waitFor(
    jobId: string,
    states: JobEventType | readonly JobEventType[],
    options: { timeoutMs?: number } = {},
  ): Promise<JobEvent> {
    const wanted: ReadonlySet<string> = new Set(typeof states === 'string' ? [states] : states);
    const timeoutMs = options.timeoutMs ?? 30_000;
    await this.watch();
    const hit = this.seen.get(jobId)?.find((e) => wanted.has(e.type));
    if (hit) return hit;
    return new Promise<JobEvent>((resolve, reject) => {
      const waiter: Waiter = {
        states: wanted,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
      };
      const timer = setTimeout(() => {
        const list = this.waiters.get(jobId)?.filter((w) => w !== waiter) ?? [];
        if (list.length > 0) this.waiters.set(jobId, list);
        else this.waiters.delete(jobId);
        reject(new WaitTimeoutError(jobId, [...wanted], timeoutMs));
      }, timeoutMs);
      const list = this.waiters.get(jobId) ?? [];
      list.push(waiter);
      this.waiters.set(jobId, list);
    });
  }

  /** Stops following events and disconnects the producer. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.events?.stop();
    await this.producer.disconnect();
  }

  private scheduleState(
    kind: 'PauseSchedule' | 'ResumeSchedule' | 'DeleteSchedule',
    scheduleId: string,
    reason: string | undefined,
  ): Promise<CommandReceipt> {
    return this.send([{ kind, value: { scheduleId, reason: reason ?? null } }]).then(([s]) => ({
      commandId: s!.commandId,
      scheduleId,
    }));
  }

  /**
   * Encodes each command, decodes it again and checks it with the scheduler's rules (so it is judged
   * exactly as the scheduler will read it), then sends them all at once. Throws CommandRefusedError,
   * sending nothing, if any one breaks a rule.
   */
  private async send(bodies: CommandBodyInput[]): Promise<{ commandId: string; entityId: string }[]> {
    if (this.closed) throw new Error('SchedulerClient is closed');
    const nowMs = Date.now();
    const records: { key: string; value: Buffer; commandId: string }[] = [];
    for (const [i, body] of bodies.entries()) {
      const index = position(i, bodies.length);
      const input: CommandInput = {
        commandId: randomUUID(),
        tenantId: this.options.tenantId,
        issuedAtMs: nowMs,
        body,
        callerId: this.options.callerId ?? null,
      };
      const v = body.value as { jobId?: unknown; scheduleId?: unknown };
      const entity = v.jobId ?? v.scheduleId;
      if (typeof entity !== 'string')
        throw new CommandRefusedError(
          RejectionReason.INVALID_FIELD,
          `${'jobId' in v ? 'jobId' : 'scheduleId'} must be a string`,
          index,
        );
      let value: Buffer;
      try {
        value = this.contracts.encodeCommand(input);
      } catch (err) {
        if (isContractsError(err))
          throw new CommandRefusedError(RejectionReason.INVALID_FIELD, err.message, index);
        throw err;
      }
      try {
        validateCommand(
          toEngine(await this.contracts.decodeCommand(value)),
          Buffer.from(entity),
          nowMs,
          this.limits,
          this.names,
        );
      } catch (err) {
        if (err instanceof CommandRejection) throw new CommandRefusedError(err.reason, err.message, index);
        throw err;
      }
      records.push({ key: entity, value, commandId: input.commandId });
    }
    try {
      await this.producer.send(
        this.commandsTopic,
        records.map((r) => ({ key: r.key, value: r.value })),
      );
    } catch (err) {
      if (err instanceof RecordTooLargeError)
        throw new CommandRefusedError(
          RejectionReason.PAYLOAD_TOO_LARGE,
          err.message,
          position(err.index, records.length),
        );
      throw err;
    }
    return records.map((r) => ({ commandId: r.commandId, entityId: r.key }));
  }

  /** Starts following the events topic (once), from its end, and waits for the assignment. */
  private watch(): Promise<void> {
    if (this.eventsReady) return this.eventsReady;
    let assigned!: () => void;
    const ready = new Promise<void>((resolve) => (assigned = resolve));
    this.events = this.kafka.groupConsumer(
      {
        groupId: `sched-client-events-${randomUUID()}`,
        topics: [this.eventsTopic],
        fromBeginning: false,
        maxWaitTimeMs: 50,
        sessionTimeoutMs: 10_000,
        heartbeatIntervalMs: 1_000,
      },
      {
        onAssigned: async () => assigned(),
        onBatch: async (batch) => {
          for (const m of batch.messages) {
            if (!m.value) continue;
            const event = await this.contracts.decodeEvent(m.value).catch(() => null);
            if (event) this.remember(event);
          }
        },
      },
    );
    // The group's offsets are set at the first fetch after the assignment: a short wait so an event
    // of a command sent right after `connect` is not before the point followed from.
    this.eventsReady = this.events
      .start()
      .then(() => ready)
      .then(() => new Promise((r) => setTimeout(r, 500)));
    return this.eventsReady;
  }

  private remember(event: JobEvent): void {
    const list = this.seen.get(event.jobId);
    if (list) list.push(event);
    else {
      if (this.seen.size >= REMEMBERED_JOBS) this.seen.delete(this.seen.keys().next().value!);
      this.seen.set(event.jobId, [event]);
    }
    const waiting = this.waiters.get(event.jobId);
    if (!waiting) return;
    const rest = waiting.filter((w) => {
      if (!w.states.has(event.type)) return true;
      w.resolve(event);
      return false;
    });
    if (rest.length > 0) this.waiters.set(event.jobId, rest);
    else this.waiters.delete(event.jobId);
  }
}

/** 1-based position in a batch of more than one, 0 for a single command (CommandRefusedError.index). */
function position(i: number, of: number): number {
  return of > 1 ? i + 1 : 0;
}

function unknownFields(spec: object, allowed: ReadonlySet<string>, i: number, of: number): void {
  if (spec === null || typeof spec !== 'object')
    throw new CommandRefusedError(RejectionReason.INVALID_FIELD, 'expected an object', position(i, of));
  const unknown = Object.keys(spec).filter((k) => !allowed.has(k));
  if (unknown.length > 0)
    throw new CommandRefusedError(
      RejectionReason.INVALID_FIELD,
      `unknown field(s) ${unknown.join(', ')} (known: ${[...allowed].join(', ')})`,
      position(i, of),
    );
}

function instant(what: string, v: Instant, reason: CommandRefusedError['reason'], index: number): number {
  const ms = v instanceof Date ? v.getTime() : typeof v === 'string' ? Date.parse(v) : v;
  if (typeof ms !== 'number' || !Number.isFinite(ms))
    throw new CommandRefusedError(
      reason,
      `${what} must be a Date, epoch milliseconds or an ISO-8601 string (got ${JSON.stringify(v)})`,
      index,
    );
  return Math.round(ms);
}

/** The object without its undefined fields, so the encoder writes the schema's default for them. */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function payloadBytes(payload: unknown): Buffer {
  if (Buffer.isBuffer(payload)) return payload;
  if (payload instanceof Uint8Array)
    return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  return Buffer.from(JSON.stringify(payload ?? null));
}
