/**
 * The commands the scheduler applies, as plain data after decoding. The Avro contract
 * (`@sched/contracts`) is mapped onto these by a SchedulerCodec, so the engine does not depend on
 * how the wire format represents unions and nulls.
 */

export interface CreateJobCommand {
  kind: 'CreateJob';
  commandId: string;
  tenantId: string;
  jobId: string;
  queue: string;
  dueAtMs: number;
  payload: Buffer;
  priority: number;
  businessKey: string | null;
  maxAttempts: number | null;
  retryPolicy: unknown;
  jitterWindowMs: number;
  expiresAtMs: number | null;
  executionTimeoutMs: number | null;
  headers: Record<string, string>;
}

export interface CancelJobCommand {
  kind: 'CancelJob';
  commandId: string;
  tenantId: string;
  /** Who issued it (`Command.callerId`). */
  callerId?: string | null;
  jobId: string;
  reason: string | null;
}

export interface RescheduleJobCommand {
  kind: 'RescheduleJob';
  commandId: string;
  tenantId: string;
  /** Who issued it (`Command.callerId`). */
  callerId?: string | null;
  jobId: string;
  dueAtMs: number;
  expectedVersion: number | null;
}

/**
 * A worker's report of a finished attempt. The worker already wrote the outcome under its lease
 * fence; the owner only needs to index a retry (the job is SCHEDULED again) so it fires on time.
 */
export interface AttemptResultCommand {
  kind: 'AttemptResult';
  commandId: string;
  tenantId: string;
  jobId: string;
  attempt: number;
  outcome: string;
}

/** Creates or replaces a recurring schedule (the job template and its recurrence). */
export interface UpsertScheduleCommand {
  kind: 'UpsertSchedule';
  commandId: string;
  tenantId: string;
  scheduleId: string;
  queue: string;
  payload: Buffer;
  priority: number;
  headers: Record<string, string>;
  maxAttempts: number | null;
  executionTimeoutMs: number | null;
  retryPolicy: unknown;
  cron: string | null;
  intervalMs: number | null;
  timeZone: string;
  startAtMs: number | null;
  endAtMs: number | null;
  maxRuns: number | null;
  misfirePolicy: 'FIRE_ONCE' | 'FIRE_ALL' | 'SKIP';
  misfireFireAllCap: number;
  misfireDeadlineMs: number | null;
  overlapPolicy: 'ALLOW' | 'SKIP' | 'BUFFER_ONE' | 'CANCEL_PREVIOUS';
  dstSkippedPolicy: 'SHIFT' | 'SKIP';
  dstRepeatedPolicy: 'FIRST' | 'LAST' | 'BOTH';
  jitterWindowMs: number;
  expectedVersion: number | null;
}

/** Pause, resume or delete a schedule. */
export interface ScheduleStateCommand {
  kind: 'PauseSchedule' | 'ResumeSchedule' | 'DeleteSchedule';
  commandId: string;
  tenantId: string;
  scheduleId: string;
}

/** Commands the engine decodes but does not apply yet (schedules, attempt results). */
export interface OtherCommand {
  kind: 'Other';
  commandId: string;
  tenantId: string;
  type: string;
  /** Key the command must carry (job or schedule id). */
  entityId: string;
}

export type SchedulerCommand =
  | CreateJobCommand
  | CancelJobCommand
  | RescheduleJobCommand
  | AttemptResultCommand
  | UpsertScheduleCommand
  | ScheduleStateCommand
  | OtherCommand;

/** Stable, machine-readable reasons on `sched.commands.rejected` (the contract's catalogue). */
import { RejectionReason, type RejectionReasonCode } from '@sched/contracts';
export const RejectReason = RejectionReason;
export type RejectReason = RejectionReasonCode;

/** A command that cannot be applied, and why. */
export class CommandRejection extends Error {
  readonly retriable = false;
  constructor(
    readonly reason: RejectReason,
    message: string,
  ) {
    super(message);
    this.name = 'CommandRejection';
  }
}

/** The fields of a dispatch record the engine fills in; the codec encodes them. */
export interface DispatchFields {
  eventId: string;
  jobId: string;
  tenantId: string;
  queue: string;
  version: number;
  attempt: number;
  epoch: number;
  partition: number;
  dueAtMs: number;
  claimedAtMs: number;
  payload: Buffer;
  priority: number;
  businessKey: string | null;
  idempotencyKey: string;
  executionTimeoutMs: number | null;
  scheduleId: string | null;
  occurrenceAtMs: number | null;
  headers: Record<string, string>;
}

export interface RejectedFields {
  reasonCode: RejectReason;
  message: string;
  sourceTopic: string;
  sourcePartition: number;
  sourceOffset: string;
  originalKey: Buffer | null;
  originalValue: Buffer;
  /** Set when `originalKey` holds only the key's first bytes: its full size. */
  originalKeyBytes?: number | null;
  /** Set when `originalValue` holds only the value's first bytes: its full size. */
  originalValueBytes?: number | null;
  rejectedAtMs: number;
  schedulerId: string;
}

/** The engine's view of the wire format. */
export interface SchedulerCodec {
  /** Throws CommandRejection (UNDECODABLE, UNKNOWN_SCHEMA_ID, INVALID_FIELD) for bad bytes. */
  decodeCommand(value: Buffer): Promise<SchedulerCommand>;
  encodeDispatch(d: DispatchFields): Buffer;
  /** The framing (magic byte, schema id) of a Dispatch record whose body Postgres writes. */
  dispatchHeader(): Buffer;
  /** The claim time carried by a dispatch record (for the publication-lag metric). */
  dispatchClaimedAt(value: Buffer): Promise<number>;
  encodeRejected(r: RejectedFields): Buffer;
  encodeEvent(e: JobEventFields): Buffer;
}

/** A lifecycle event on `sched.events`. */
export interface JobEventFields {
  eventId: string;
  jobId: string;
  tenantId: string;
  type: 'CANCELLED' | 'RESCHEDULED' | 'EXPIRED' | 'DEAD_LETTERED';
  version: number;
  attempt: number;
  atMs: number;
  detail: string | null;
  /** The command's caller (null for the platform's own transitions: EXPIRED). */
  callerId: string | null;
}
