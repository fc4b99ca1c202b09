/**
 * Stable error codes of the recurrence library. None is retriable: each one is bad input, and
 * calling again with the same input fails the same way.
 */
export const RecurrenceErrorCode = {
  /** `cron` is not a 5- or 6-field cron-parser expression, uses `H`, or can never fire. */
  InvalidCron: 'SCHED_E_INVALID_CRON',
  /** `timeZone` is not an IANA zone name that luxon (ICU) knows. */
  UnknownZone: 'SCHED_E_UNKNOWN_ZONE',
  /** `endAtMs` is at or before `startAtMs`. */
  EndBeforeStart: 'SCHED_E_END_BEFORE_START',
  /** `intervalMs` is not an integer >= 1000. */
  InvalidInterval: 'SCHED_E_INVALID_INTERVAL',
  /** Anything else wrong with the spec: both or neither of cron/interval, a bad policy or bound. */
  InvalidRecurrence: 'SCHED_E_INVALID_RECURRENCE',
  /** A call argument is out of range (a limit, an instant, a jitter window, a schedule id). */
  InvalidArgument: 'SCHED_E_INVALID_ARGUMENT',
} as const;

export type RecurrenceErrorCode = (typeof RecurrenceErrorCode)[keyof typeof RecurrenceErrorCode];

/** The one error type the library throws: a stable `code`, and `retriable: false`. */
export class RecurrenceError extends Error {
  override readonly name = 'RecurrenceError';
  readonly retriable = false;

  constructor(
    readonly code: RecurrenceErrorCode,
    message: string,
  ) {
    super(message);
  }
}
