import { StackError } from './errors.js';

export interface WaitOptions {
  /** What is awaited, for the timeout message ("Kafka to answer metadata"). */
  what: string;
  timeoutMs: number;
  intervalMs?: number;
  /** Extra text for the timeout error's fix (usually "see .stack/logs/x.log"). */
  fix: string;
  /**
   * Called between attempts; throw to give up early (the awaited process died, say). Its
   * error replaces the timeout.
   */
  abortIf?: () => void | Promise<void>;
}

/**
 * Polls `probe` until it returns a value other than `undefined`, or fails with
 * SCHED_E_STACK_TIMEOUT naming the last reason `probe` gave through `reason`. Never waits
 * longer than `timeoutMs` plus one probe.
 */
export async function waitFor<T>(
  probe: (reason: (why: string) => void) => Promise<T | undefined>,
  options: WaitOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last = 'no answer yet';
  const reason = (why: string): void => {
    last = why;
  };
  for (;;) {
    if (options.abortIf) await options.abortIf();
    try {
      const value = await probe(reason);
      if (value !== undefined) return value;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() >= deadline) {
      throw new StackError(
        'SCHED_E_STACK_TIMEOUT',
        `timed out after ${Math.round(options.timeoutMs / 1000)} s waiting for ${options.what} (last: ${last})`,
        options.fix,
        true,
      );
    }
    await sleep(options.intervalMs ?? 250);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rejects with SCHED_E_STACK_TIMEOUT if `work` takes longer than `timeoutMs`. */
export async function withTimeout<T>(
  work: Promise<T>,
  timeoutMs: number,
  what: string,
  fix: string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new StackError('SCHED_E_STACK_TIMEOUT', `timed out after ${timeoutMs} ms: ${what}`, fix, true),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
