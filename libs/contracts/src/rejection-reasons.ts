import type { ContractsError } from './contracts-error';

/**
 * Stable machine-readable codes for `CommandRejected.reasonCode`. The field is a string, not an
 * enum, so a new code needs no schema change and never breaks an old reader; this object is the
 * catalogue. Add codes here (append only, never rename: consumers match on them).
 */
export const RejectionReason = {
  /** Not Confluent-framed Avro, a tombstone, or the body does not parse. */
  UNDECODABLE: 'UNDECODABLE',
  /** The frame names a schema id the registry does not know. */
  UNKNOWN_SCHEMA_ID: 'UNKNOWN_SCHEMA_ID',
  /** The writer schema is known but is not a readable version of io.sched.v1.Command. */
  INCOMPATIBLE_SCHEMA: 'INCOMPATIBLE_SCHEMA',
  /** A field holds a value the schema allows but the scheduler does not (empty id, both cron and intervalMs, …). */
  INVALID_FIELD: 'INVALID_FIELD',
  /** The queue is not configured. */
  UNKNOWN_QUEUE: 'UNKNOWN_QUEUE',
  /** The tenant does not exist or is disabled. */
  UNKNOWN_TENANT: 'UNKNOWN_TENANT',
  /** dueAtMs is too far in the past or the future for the scheduler's limits. */
  DUE_AT_OUT_OF_RANGE: 'DUE_AT_OUT_OF_RANGE',
  /** The payload exceeds the configured maximum. */
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  /** The Kafka key is not the body's jobId/scheduleId, so ordering per entity would break. */
  KEY_MISMATCH: 'KEY_MISMATCH',
  /** A command kind this scheduler version decodes but does not apply. */
  UNSUPPORTED_COMMAND: 'UNSUPPORTED_COMMAND',
  /** The tenant's quota would be exceeded. */
  QUOTA_EXCEEDED: 'QUOTA_EXCEEDED',
  /** The target job or schedule does not exist. */
  NOT_FOUND: 'NOT_FOUND',
  /** expectedVersion does not match the current version. */
  VERSION_CONFLICT: 'VERSION_CONFLICT',
  /** The job already reached a terminal state (succeeded, cancelled, expired, dead-lettered). */
  ALREADY_TERMINAL: 'ALREADY_TERMINAL',
  /** The same jobId/scheduleId exists with different content under another commandId. */
  DUPLICATE_ID: 'DUPLICATE_ID',
  /** A schedule's cron expression does not parse or can never fire. */
  INVALID_CRON: 'INVALID_CRON',
  /** A schedule's time zone is not an IANA zone. */
  UNKNOWN_TIME_ZONE: 'UNKNOWN_TIME_ZONE',
  /** A schedule ends before it starts. */
  INVALID_SCHEDULE_WINDOW: 'INVALID_SCHEDULE_WINDOW',
  /** A schedule's interval is zero, negative or too small. */
  INVALID_INTERVAL: 'INVALID_INTERVAL',
  /**
   * The command names a job or schedule of another tenant (a cancel, reschedule, schedule change, or
   * a create reusing its id): refused, the other tenant's entity untouched.
   */
  TENANT_MISMATCH: 'TENANT_MISMATCH',
  /** A reschedule of a job a worker is running: it would not stop the run (cancel it instead). */
  JOB_RUNNING: 'JOB_RUNNING',
} as const;

export type RejectionReasonCode = (typeof RejectionReason)[keyof typeof RejectionReason];

/**
 * The rejection reason for a decode error that is the record's fault, or undefined when the error is
 * retriable (registry unavailable) or not a decode error: such a record must not be rejected.
 */
export function rejectionReasonFor(error: ContractsError): RejectionReasonCode | undefined {
  switch (error.code) {
    case 'SCHED_E_UNDECODABLE':
      return RejectionReason.UNDECODABLE;
    case 'SCHED_E_UNKNOWN_SCHEMA_ID':
      return RejectionReason.UNKNOWN_SCHEMA_ID;
    case 'SCHED_E_INCOMPATIBLE_SCHEMA':
      return RejectionReason.INCOMPATIBLE_SCHEMA;
    default:
      return undefined;
  }
}
