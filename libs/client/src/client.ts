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
  type JobEvent,
  type JobEventType,
} from '@sched/contracts';
import { kafkajsPort, RecordTooLargeError, type KafkaPort, type MessageProducer } from '@sched/kafka';
import { createLogger, type Logger } from '@sched/logging';
import { CommandRefusedError } from './client-error.js';
import { JobEventWatcher } from './event-watcher.js';
import {
  createJobBody,
  instant,
  position,
  upsertScheduleBody,
  type Instant,
  type JobSpec,
  type ScheduleSpec,
} from './specs.js';

export type { Instant, JobSpec, ScheduleSpec } from './specs.js';

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

/** What a sent command is known by: its id (for `GET /v1/commands/:id`) and the entity it names. */
export interface CommandReceipt {
  commandId: string;
  jobId?: string;
  scheduleId?: string;
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
  private readonly events: JobEventWatcher;
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
    this.events = new JobEventWatcher(kafka, contracts, options.eventsTopic ?? TOPICS.events);
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
    if (options.watchEvents) await client.events.watch();
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
    const bodies = jobs.map((job, i) => createJobBody(job, i, jobs.length));
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
    const [s] = await this.send([upsertScheduleBody(spec)]);
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
   * Rejects with WaitTimeoutError after `timeoutMs` (default 30 s). See `JobEventWatcher`.
   */
  waitFor(
    jobId: string,
    states: JobEventType | readonly JobEventType[],
    options: { timeoutMs?: number } = {},
  ): Promise<JobEvent> {
    return this.events.waitFor(jobId, states, options.timeoutMs ?? 30_000);
  }

  /** Stops following events and disconnects the producer. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.events.stop();
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
}
