/**
 * Control-flow errors a handler throws to say how its failure should be treated. Anything else
 * is UNKNOWN: retried, relying on the job's idempotency key.
 */

export type FailureClass = 'TRANSIENT' | 'THROTTLED' | 'PERMANENT' | 'UNKNOWN';

/** Retry with the standard backoff: a timeout, a reset connection. */
export class TransientFailure extends Error {
  readonly failureClass = 'TRANSIENT' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransientFailure';
  }
}

/** Downstream said slow down (429): honour `retryAfterMs` and back off harder. */
export class Throttled extends Error {
  readonly failureClass = 'THROTTLED' as const;
  constructor(
    readonly retryAfterMs: number | null,
    message = 'throttled by downstream',
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'Throttled';
  }
}

/** Retrying cannot help (validation error, business rule): straight to the dead-letter queue. */
export class PermanentFailure extends Error {
  readonly failureClass = 'PERMANENT' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentFailure';
  }
}

export interface ClassifiedFailure {
  failureClass: FailureClass;
  /** From a Throttled error or a Retry-After-like field on the error. */
  retryAfterMs: number | null;
  message: string;
}

/** Classifies what a handler threw. Also understands `{ retryAfterMs }` / `{ status: 429 }` shaped errors. */
export function classifyFailure(err: unknown): ClassifiedFailure {
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  // By class, or by the class's own field and name: a handler built against another copy of the SDK
  // (a published package beside a bundled worker) throws classes that are not these.
  const is = (kind: FailureClass, name: string) =>
    err instanceof Error && err.name === name && (err as { failureClass?: unknown }).failureClass === kind;
  if (err instanceof Throttled || is('THROTTLED', 'Throttled')) {
    const after = (err as { retryAfterMs?: unknown }).retryAfterMs;
    return { failureClass: 'THROTTLED', retryAfterMs: typeof after === 'number' ? after : null, message };
  }
  if (err instanceof PermanentFailure || is('PERMANENT', 'PermanentFailure'))
    return { failureClass: 'PERMANENT', retryAfterMs: null, message };
  if (err instanceof TransientFailure || is('TRANSIENT', 'TransientFailure'))
    return { failureClass: 'TRANSIENT', retryAfterMs: null, message };
  if (err && typeof err === 'object') {
    const e = err as { status?: unknown; statusCode?: unknown; retryAfterMs?: unknown };
    const status =
      typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : null;
    const retryAfterMs = typeof e.retryAfterMs === 'number' && e.retryAfterMs >= 0 ? e.retryAfterMs : null;
    if (status === 429 || status === 503 || retryAfterMs !== null)
      return { failureClass: 'THROTTLED', retryAfterMs, message };
    if (status !== null && status >= 400 && status < 500)
      return { failureClass: 'PERMANENT', retryAfterMs: null, message };
  }
  return { failureClass: 'UNKNOWN', retryAfterMs: null, message };
}
