import { randomUUID } from 'node:crypto';
import {
  RejectionReason,
  type CommandBodyInput,
  type DstRepeatedPolicy,
  type DstSkippedPolicy,
  type MisfirePolicy,
  type OverlapPolicy,
  type RetryPolicyInput,
} from '@sched/contracts';
import { CommandRefusedError } from './client-error.js';

/**
 * What a user gives the client (a job, a schedule) turned into the contract's command bodies: its
 * own fields checked (an unknown one refused), instants and payloads converted, the rest left to the
 * contract's defaults. The platform's rules are checked after, on the encoded command.
 */

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

/** A CreateJob body for the `i`th of `of` jobs (its position names it in an error). */
export function createJobBody(job: JobSpec, i: number, of: number): CommandBodyInput {
  unknownFields(job, JOB_FIELDS, i, of);
  return {
    kind: 'CreateJob',
    // Fields left out take the contract's defaults (the Avro schema's), as on every producer.
    value: defined({
      jobId: job.jobId ?? randomUUID(),
      queue: job.queue,
      dueAtMs: instant('dueAt', job.dueAt, RejectionReason.DUE_AT_OUT_OF_RANGE, position(i, of)),
      payload: payloadBytes(job.payload),
      priority: job.priority,
      businessKey: job.businessKey,
      maxAttempts: job.maxAttempts,
      retryPolicy: job.retryPolicy,
      jitterWindowMs: job.jitterWindowMs,
      expiresAtMs:
        job.expiresAt === undefined
          ? undefined
          : instant('expiresAt', job.expiresAt, RejectionReason.INVALID_FIELD, position(i, of)),
      executionTimeoutMs: job.executionTimeoutMs,
      headers: job.headers,
    }),
  };
}

/** An UpsertSchedule body. */
export function upsertScheduleBody(spec: ScheduleSpec): CommandBodyInput {
  unknownFields(spec, SCHEDULE_FIELDS, 0, 1);
  const opt = (what: string, v: Instant | undefined) =>
    v === undefined ? undefined : instant(what, v, RejectionReason.INVALID_SCHEDULE_WINDOW, 0);
  return {
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
  };
}

/** 1-based position in a batch of more than one, 0 for a single command (CommandRefusedError.index). */
export function position(i: number, of: number): number {
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

export function instant(
  what: string,
  v: Instant,
  reason: CommandRefusedError['reason'],
  index: number,
): number {
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
