import type { RejectionReasonCode } from '@sched/contracts';

/**
 * A command the client refused to send: it breaks a rule the scheduler would reject it for. Nothing
 * of the call was sent (a batch is checked whole before any of it goes out).
 *
 * `reason` is the code the scheduler would have rejected it with (`RejectionReason`, the same
 * catalogue `sched.commands.rejected` uses), so one `switch` serves both paths.
 */
export class CommandRefusedError extends Error {
  readonly code = 'SCHED_E_COMMAND_REFUSED';
  constructor(
    readonly reason: RejectionReasonCode,
    message: string,
    /** The position of the refused command in a batch call (`createJobs`); 0 for a single command. */
    readonly index = 0,
  ) {
    super(index > 0 ? `command ${index} of the batch: ${message}` : message);
    this.name = 'CommandRefusedError';
  }
}

/** A `waitFor` that saw no such event within its time. */
export class WaitTimeoutError extends Error {
  readonly code = 'SCHED_E_WAIT_TIMEOUT';
  constructor(
    readonly jobId: string,
    readonly states: readonly string[],
    readonly timeoutMs: number,
  ) {
    super(`no ${states.join(' or ')} event for job ${jobId} within ${timeoutMs} ms`);
    this.name = 'WaitTimeoutError';
  }
}

export function isCommandRefused(err: unknown): err is CommandRefusedError {
  return err instanceof CommandRefusedError;
}
