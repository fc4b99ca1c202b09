/** The API's error catalogue: one place maps stable codes to HTTP status. */
export const HTTP_STATUS: Record<string, number> = {
  SCHED_E_VALIDATION: 400,
  SCHED_E_UNKNOWN_QUEUE: 400,
  SCHED_E_UNKNOWN_TENANT: 400,
  SCHED_E_INVALID_CRON: 400,
  SCHED_E_UNKNOWN_ZONE: 400,
  SCHED_E_END_BEFORE_START: 400,
  SCHED_E_INVALID_INTERVAL: 400,
  SCHED_E_INVALID_RECURRENCE: 400,
  SCHED_E_INVALID_ARGUMENT: 400,
  SCHED_E_REPLAY_REASON_REQUIRED: 400,
  SCHED_E_REPLAY_INVALID: 400,
  SCHED_E_UNAUTHENTICATED: 401,
  SCHED_E_REPLAY_FORBIDDEN: 403,
  SCHED_E_FORBIDDEN: 403,
  SCHED_E_TENANT_DISABLED: 403,
  SCHED_E_NOT_FOUND: 404,
  SCHED_E_JOB_RUNNING: 409,
  SCHED_E_VERSION_CONFLICT: 409,
  SCHED_E_QUOTA_EXCEEDED: 429,
  SCHED_E_RATE_LIMITED: 429,
  SCHED_E_REGISTRY_UNAVAILABLE: 503,
};

export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retriable = false,
    /** Sent as `Retry-After` (seconds, rounded up). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** `{ error: { code, message, retriable } }` with the catalogue's status (500 for unknown errors). */
export function toHttp(err: unknown): {
  status: number;
  body: { error: { code: string; message: string; retriable: boolean } };
} {
  const e = err as {
    code?: unknown;
    message?: unknown;
    retriable?: unknown;
    validation?: unknown;
    statusCode?: number;
  };
  if (e && e.validation)
    return {
      status: 400,
      body: { error: { code: 'SCHED_E_VALIDATION', message: String(e.message), retriable: false } },
    };
  const code = typeof e?.code === 'string' && e.code.startsWith('SCHED_E_') ? e.code : 'SCHED_E_INTERNAL';
  const status = HTTP_STATUS[code] ?? (e?.statusCode && e.statusCode < 500 ? e.statusCode : 500);
  return {
    status,
    body: {
      error: {
        code,
        message: status === 500 && code === 'SCHED_E_INTERNAL' ? 'internal error' : String(e?.message ?? err),
        retriable: e?.retriable === true || status >= 500,
      },
    },
  };
}
