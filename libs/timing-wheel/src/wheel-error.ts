/**
 * Stable error codes of the timing wheel. None of them is retriable: each one is a caller bug or a
 * hard limit, and calling again with the same arguments fails the same way.
 */
export const WheelErrorCode = {
  /** `dueMs` is not an integer in [0, Number.MAX_SAFE_INTEGER]. */
  InvalidDue: 'SCHED_E_WHEEL_INVALID_DUE',
  /** `nowMs` passed to `advance` is not an integer in [0, Number.MAX_SAFE_INTEGER]. */
  InvalidNow: 'SCHED_E_WHEEL_INVALID_NOW',
  /** `maxBatch` passed to `advance` is not an integer in [1, 2^24]. */
  InvalidBatch: 'SCHED_E_WHEEL_INVALID_BATCH',
  /** The job id is not a non-empty, well-formed string of at most 65,535 UTF-8 bytes. */
  InvalidId: 'SCHED_E_WHEEL_INVALID_ID',
  /** A tag passed to `add`, `load` or `rescheduleById` is not a 32-bit signed integer. */
  InvalidTag: 'SCHED_E_WHEEL_INVALID_TAG',
  /** `add` or `load` got a job id that is already pending in this wheel. */
  DuplicateId: 'SCHED_E_WHEEL_DUPLICATE_ID',
  /** A constructor option is missing or out of range. */
  InvalidOption: 'SCHED_E_WHEEL_INVALID_OPTION',
  /** The wheel would exceed its hard limits (2^26 - 1 entries, or 4 GiB of ids longer than 40 bytes). */
  Capacity: 'SCHED_E_WHEEL_CAPACITY',
} as const;

export type WheelErrorCode = (typeof WheelErrorCode)[keyof typeof WheelErrorCode];

/** The one error type the wheel throws: a stable `code`, and `retriable: false` (a retry cannot help). */
export class TimingWheelError extends Error {
  override readonly name = 'TimingWheelError';
  readonly retriable = false;

  constructor(
    readonly code: WheelErrorCode,
    message: string,
  ) {
    super(message);
  }
}
