import { fromWirePolicy, type WireRetryPolicy } from '@sched/retry-policy';
import { compileRecurrence, RecurrenceError, type Recurrence } from '@sched/recurrence';
import {
  CommandRejection,
  RejectReason,
  type SchedulerCommand,
  type UpsertScheduleCommand,
} from './commands.js';

export interface ValidationLimits {
  maxPayloadBytes: number;
  /** Latest accepted due time, relative to now. */
  maxDueAheadMs: number;
  /** Earliest accepted due time, absolute (older is surely a unit mistake: seconds for ms). */
  minDueAtMs: number;
  maxJitterWindowMs: number;
}

export interface KnownNames {
  hasQueue(queue: string): boolean;
  hasTenant(tenant: string): boolean;
  /**
   * Reads the names again now (at most every few hundred ms): a command naming a tenant or queue
   * not seen yet is checked again before it is rejected, so one created a moment ago is accepted.
   */
  refresh?(): Promise<void>;
}

/** The scheduler's limits when its configuration does not say otherwise (`SCHED_MAX_PAYLOAD_BYTES`, …). */
export const DEFAULT_VALIDATION_LIMITS: Readonly<ValidationLimits> = Object.freeze({
  maxPayloadBytes: 256 * 1024,
  maxDueAheadMs: 10 * 365 * 24 * 3600_000,
  minDueAtMs: Date.UTC(2000, 0, 1),
  maxJitterWindowMs: 24 * 3600_000,
});

const ID = /^[\x21-\x7e]{1,200}$/;
/** Longest businessKey a CreateJob may carry (the HTTP API's schema says the same). */
export const MAX_BUSINESS_KEY_CHARS = 500;

/**
 * Checks a decoded command against the platform's rules before it touches the database.
 * Pure: `nowMs` comes in. Throws CommandRejection with a stable reason.
 */
export function validateCommand(
  cmd: SchedulerCommand,
  key: Buffer | null,
  nowMs: number,
  limits: ValidationLimits,
  names: KnownNames,
): void {
  const fail = (reason: RejectReason, message: string): never => {
    throw new CommandRejection(reason, message);
  };
  if (!cmd.commandId || cmd.commandId.length > 200)
    fail(RejectReason.INVALID_FIELD, 'commandId must be 1..200 characters');
  if (!names.hasTenant(cmd.tenantId)) fail(RejectReason.UNKNOWN_TENANT, `unknown tenant "${cmd.tenantId}"`);
  const entityId = cmd.kind === 'Other' ? cmd.entityId : 'scheduleId' in cmd ? cmd.scheduleId : cmd.jobId;
  if (!ID.test(entityId))
    fail(RejectReason.INVALID_FIELD, 'id must be 1..200 printable ASCII characters without spaces');
  // The key picks the partition that owns the job; a command keyed otherwise would land where
  // later cancels and reschedules (keyed by id) cannot find it.
  const keyText = key?.toString('utf8') ?? null;
  if (keyText !== entityId)
    fail(
      RejectReason.KEY_MISMATCH,
      `message key must equal the id "${entityId}" (got ${JSON.stringify(keyText)})`,
    );

  switch (cmd.kind) {
    case 'CreateJob': {
      if (!names.hasQueue(cmd.queue)) fail(RejectReason.UNKNOWN_QUEUE, `unknown queue "${cmd.queue}"`);
      checkDue(cmd.dueAtMs, nowMs, limits, fail);
      if (cmd.payload.length > limits.maxPayloadBytes) {
        fail(
          RejectReason.PAYLOAD_TOO_LARGE,
          `payload is ${cmd.payload.length} bytes; the limit is ${limits.maxPayloadBytes}`,
        );
      }
      // As the API's cap; the Dispatch record's layout (store migration 015) carries at most 65,534 bytes.
      if (cmd.businessKey !== null && cmd.businessKey.length > MAX_BUSINESS_KEY_CHARS)
        fail(RejectReason.INVALID_FIELD, `businessKey must be at most ${MAX_BUSINESS_KEY_CHARS} characters`);
      if (!Number.isSafeInteger(cmd.priority) || Math.abs(cmd.priority) > 1000)
        fail(RejectReason.INVALID_FIELD, 'priority must be an integer in [-1000, 1000]');
      if (
        cmd.maxAttempts !== null &&
        (!Number.isSafeInteger(cmd.maxAttempts) || cmd.maxAttempts < 1 || cmd.maxAttempts > 1000)
      ) {
        fail(RejectReason.INVALID_FIELD, 'maxAttempts must be in [1, 1000]');
      }
      if (
        !Number.isSafeInteger(cmd.jitterWindowMs) ||
        cmd.jitterWindowMs < 0 ||
        cmd.jitterWindowMs > limits.maxJitterWindowMs
      ) {
        fail(RejectReason.INVALID_FIELD, `jitterWindowMs must be in [0, ${limits.maxJitterWindowMs}]`);
      }
      if (cmd.retryPolicy) {
        try {
          fromWirePolicy(cmd.retryPolicy as WireRetryPolicy);
        } catch (err) {
          fail(RejectReason.INVALID_FIELD, `retryPolicy: ${(err as Error).message}`);
        }
      }
      if (cmd.expiresAtMs !== null && !(cmd.expiresAtMs > cmd.dueAtMs))
        fail(RejectReason.INVALID_FIELD, 'expiresAtMs must be after dueAtMs');
      if (
        cmd.executionTimeoutMs !== null &&
        !(Number.isSafeInteger(cmd.executionTimeoutMs) && cmd.executionTimeoutMs > 0)
      ) {
        fail(RejectReason.INVALID_FIELD, 'executionTimeoutMs must be a positive integer');
      }
      return;
    }
    case 'RescheduleJob':
      checkDue(cmd.dueAtMs, nowMs, limits, fail);
      if (
        cmd.expectedVersion !== null &&
        !(Number.isSafeInteger(cmd.expectedVersion) && cmd.expectedVersion > 0)
      ) {
        fail(RejectReason.INVALID_FIELD, 'expectedVersion must be a positive integer');
      }
      return;
    case 'CancelJob':
    case 'AttemptResult':
    case 'PauseSchedule':
    case 'ResumeSchedule':
    case 'DeleteSchedule':
      return;
    case 'UpsertSchedule': {
      if (!names.hasQueue(cmd.queue)) fail(RejectReason.UNKNOWN_QUEUE, `unknown queue "${cmd.queue}"`);
      if (cmd.scheduleId.length > 150)
        fail(RejectReason.INVALID_FIELD, 'scheduleId must be at most 150 characters');
      if (cmd.payload.length > limits.maxPayloadBytes) {
        fail(
          RejectReason.PAYLOAD_TOO_LARGE,
          `payload is ${cmd.payload.length} bytes; the limit is ${limits.maxPayloadBytes}`,
        );
      }
      if (cmd.maxRuns !== null && !(Number.isSafeInteger(cmd.maxRuns) && cmd.maxRuns > 0))
        fail(RejectReason.INVALID_FIELD, 'maxRuns must be a positive integer');
      if (!(
        Number.isSafeInteger(cmd.misfireFireAllCap) &&
        cmd.misfireFireAllCap > 0 &&
        cmd.misfireFireAllCap <= 10_000
      )) {
        fail(RejectReason.INVALID_FIELD, 'misfireFireAllCap must be in [1, 10000]');
      }
      if (
        cmd.misfireDeadlineMs !== null &&
        !(Number.isSafeInteger(cmd.misfireDeadlineMs) && cmd.misfireDeadlineMs > 0)
      ) {
        fail(RejectReason.INVALID_FIELD, 'misfireDeadlineMs must be a positive integer');
      }
      if (
        !Number.isSafeInteger(cmd.jitterWindowMs) ||
        cmd.jitterWindowMs < 0 ||
        cmd.jitterWindowMs > limits.maxJitterWindowMs
      ) {
        fail(RejectReason.INVALID_FIELD, `jitterWindowMs must be in [0, ${limits.maxJitterWindowMs}]`);
      }
      compileScheduleRecurrence(cmd);
      return;
    }
    case 'Other':
      return;
  }
}

function checkDue(
  dueAtMs: number,
  nowMs: number,
  limits: ValidationLimits,
  fail: (r: RejectReason, m: string) => never,
): void {
  if (!Number.isSafeInteger(dueAtMs))
    fail(RejectReason.DUE_AT_OUT_OF_RANGE, 'dueAtMs must be an integer (ms since epoch)');
  if (dueAtMs < limits.minDueAtMs) {
    fail(
      RejectReason.DUE_AT_OUT_OF_RANGE,
      `dueAtMs ${dueAtMs} is before ${new Date(limits.minDueAtMs).toISOString()}: seconds instead of milliseconds?`,
    );
  }
  if (dueAtMs > nowMs + limits.maxDueAheadMs) {
    fail(
      RejectReason.DUE_AT_OUT_OF_RANGE,
      `dueAtMs ${new Date(dueAtMs).toISOString()} is more than ${limits.maxDueAheadMs} ms ahead`,
    );
  }
}

/**
 * The effective due time of a job with a jitter window: a deterministic point in
 * [dueAtMs, dueAtMs + windowMs] chosen from the job id, so a million "9:00" jobs spread out and a
 * replayed command lands on the same instant. Never before dueAtMs.
 */
export function jitteredDue(jobId: string, dueAtMs: number, windowMs: number): number {
  if (windowMs <= 0) return dueAtMs;
  // FNV-1a 32-bit over the id.
  let h = 0x811c9dc5;
  for (let i = 0; i < jobId.length; i++) {
    h ^= jobId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return dueAtMs + ((h >>> 0) % (windowMs + 1));
}

const RECURRENCE_REASONS: Record<string, RejectReason> = {
  SCHED_E_INVALID_CRON: RejectReason.INVALID_CRON,
  SCHED_E_UNKNOWN_ZONE: RejectReason.UNKNOWN_TIME_ZONE,
  SCHED_E_END_BEFORE_START: RejectReason.INVALID_SCHEDULE_WINDOW,
  SCHED_E_INVALID_INTERVAL: RejectReason.INVALID_INTERVAL,
};

/** Compiles a schedule's rule; a bad rule becomes a rejection with a specific reason. */
export function compileScheduleRecurrence(
  s: Pick<
    UpsertScheduleCommand,
    'cron' | 'intervalMs' | 'timeZone' | 'startAtMs' | 'endAtMs' | 'dstSkippedPolicy' | 'dstRepeatedPolicy'
  >,
): Recurrence {
  try {
    return compileRecurrence({
      cron: s.cron,
      intervalMs: s.intervalMs,
      timeZone: s.timeZone,
      startAtMs: s.startAtMs,
      endAtMs: s.endAtMs,
      dstSkipped: s.dstSkippedPolicy,
      dstRepeated: s.dstRepeatedPolicy,
    });
  } catch (err) {
    if (err instanceof RecurrenceError) {
      throw new CommandRejection(
        RECURRENCE_REASONS[(err as RecurrenceError).code] ?? RejectReason.INVALID_FIELD,
        (err as Error).message,
      );
    }
    throw err;
  }
}
