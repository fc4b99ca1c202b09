/**
 * Why the stack could not do what was asked, in a form a person can act on: a stable `code`,
 * the problem, and `fix` (what to change). `retriable` says whether running the same command
 * again, unchanged, may succeed (a slow start may; a missing Java will not).
 */
export class StackError extends Error {
  override readonly name = 'StackError';
  constructor(
    readonly code: StackErrorCode,
    message: string,
    readonly fix: string,
    readonly retriable = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export type StackErrorCode =
  | 'SCHED_E_STACK_PORT_IN_USE'
  | 'SCHED_E_STACK_NO_JAVA'
  | 'SCHED_E_STACK_NO_MAVEN'
  | 'SCHED_E_STACK_FETCH_FAILED'
  | 'SCHED_E_STACK_NO_POSTGRES'
  | 'SCHED_E_STACK_POSTGRES_FAILED'
  | 'SCHED_E_STACK_START_FAILED'
  | 'SCHED_E_STACK_TIMEOUT'
  | 'SCHED_E_STACK_CONNECTOR_FAILED'
  | 'SCHED_E_STACK_LOCKED'
  | 'SCHED_E_STACK_BAD_STATE';

/** One readable block for the terminal: problem, then fix. */
export function describeError(err: unknown): string {
  if (err instanceof StackError)
    return `${err.message}\n  fix: ${err.fix.replace(/\n/g, '\n       ')}\n  (${err.code})`;
  if (err instanceof Error) return err.stack ?? err.message;
  return String(err);
}
