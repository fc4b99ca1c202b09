import type { FailureClass } from './failures.js';

export interface ClassPolicy {
  /** First backoff ceiling, ms. */
  baseMs: number;
  /** Largest backoff, ms (the exponential stops growing here). */
  capMs: number;
  /** Total attempts allowed for failures of this class (the first run counts). */
  maxAttempts: number;
}

export interface RetryPolicy {
  default: ClassPolicy;
  /** Per-class overrides (THROTTLED backs off harder by default; PERMANENT never retries). */
  perClass: Partial<Record<FailureClass, Partial<ClassPolicy>>>;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  default: { baseMs: 1_000, capMs: 5 * 60_000, maxAttempts: 5 },
  perClass: {
    THROTTLED: { baseMs: 5_000, capMs: 15 * 60_000, maxAttempts: 8 },
    PERMANENT: { maxAttempts: 1 },
  },
};

/** One layer of overrides (queue, job): any field may be left out. */
export interface PolicyLayer {
  default?: Partial<ClassPolicy>;
  perClass?: RetryPolicy['perClass'];
}

/** Merges per-queue and per-job overrides over the defaults (later wins). Validates. */
export function resolvePolicy(...layers: (PolicyLayer | null | undefined)[]): RetryPolicy {
  let out: RetryPolicy = {
    default: { ...DEFAULT_RETRY_POLICY.default },
    perClass: { ...DEFAULT_RETRY_POLICY.perClass },
  };
  for (const l of layers) {
    if (!l) continue;
    out = {
      default: { ...out.default, ...(l.default ?? {}) },
      perClass: { ...out.perClass, ...(l.perClass ?? {}) },
    };
  }
  for (const p of [out.default, ...Object.values(out.perClass)]) {
    for (const [k, v] of Object.entries(p)) {
      if (v !== undefined && !(Number.isSafeInteger(v) && v >= (k === 'maxAttempts' ? 1 : 0))) {
        throw Object.assign(
          new Error(`retry policy ${k} must be a non-negative integer (got ${String(v)})`),
          {
            code: 'SCHED_E_INVALID_RETRY_POLICY',
            retriable: false,
          },
        );
      }
    }
  }
  return out;
}

export function classPolicy(policy: RetryPolicy, failureClass: FailureClass): ClassPolicy {
  return { ...policy.default, ...(policy.perClass[failureClass] ?? {}) };
}

export type RetryDecision =
  { retry: true; atMs: number; delayMs: number } | { retry: false; reason: 'PERMANENT' | 'EXHAUSTED' };

/**
 * When to run the next attempt after attempt number `attempt` (1 = the first run) failed with
 * `failureClass`. Capped exponential backoff with full jitter: delay = random(0, min(cap, base·2^(attempt-1))).
 * A throttled failure never retries before its Retry-After: delay = max(retryAfterMs, jittered backoff).
 * Pure: `nowMs` and `random` (in [0, 1)) come in.
 */
export function nextRetryAt(
  nowMs: number,
  attempt: number,
  policy: RetryPolicy,
  failureClass: FailureClass,
  retryAfterMs: number | null,
  random: () => number,
): RetryDecision {
  if (failureClass === 'PERMANENT') return { retry: false, reason: 'PERMANENT' };
  const p = classPolicy(policy, failureClass);
  if (attempt >= p.maxAttempts) return { retry: false, reason: 'EXHAUSTED' };
  const ceiling = Math.min(p.capMs, p.baseMs * 2 ** Math.min(attempt - 1, 52));
  let delayMs = Math.floor(random() * (ceiling + 1));
  if (failureClass === 'THROTTLED' && retryAfterMs !== null)
    delayMs = Math.max(delayMs, Math.ceil(retryAfterMs));
  return { retry: true, atMs: nowMs + delayMs, delayMs };
}

/** A small seeded PRNG (mulberry32) for reproducible jitter in tests and simulations. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The wire shape of a per-job policy (`io.sched.v1.RetryPolicy`). */
export interface WireRetryPolicy {
  baseMs: number;
  capMs: number;
  overrides: {
    failureClass: FailureClass;
    baseMs: number | null;
    capMs: number | null;
    maxAttempts: number | null;
  }[];
}

/** Converts a per-job policy from the wire into a layer for `resolvePolicy`; validates it. */
export function fromWirePolicy(w: WireRetryPolicy): PolicyLayer {
  const perClass: RetryPolicy['perClass'] = {};
  for (const o of w.overrides) {
    const p: Partial<ClassPolicy> = {};
    if (o.baseMs !== null) p.baseMs = o.baseMs;
    if (o.capMs !== null) p.capMs = o.capMs;
    if (o.maxAttempts !== null) p.maxAttempts = o.maxAttempts;
    perClass[o.failureClass] = p;
  }
  const layer: PolicyLayer = { default: { baseMs: w.baseMs, capMs: w.capMs }, perClass };
  resolvePolicy(layer);
  return layer;
}

/**
 * Applies a job's attempt budget: it is the only budget for every retriable class (a PERMANENT
 * failure still never retries).
 */
export function withMaxAttempts(policy: RetryPolicy, maxAttempts: number): RetryPolicy {
  const perClass: RetryPolicy['perClass'] = {};
  for (const [cls, p] of Object.entries(policy.perClass) as [FailureClass, Partial<ClassPolicy>][]) {
    perClass[cls] = cls === 'PERMANENT' ? p : { ...p, maxAttempts };
  }
  return { default: { ...policy.default, maxAttempts }, perClass };
}
