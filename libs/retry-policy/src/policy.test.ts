import { describe, expect, it } from 'vitest';
import {
  classifyFailure,
  DEFAULT_RETRY_POLICY,
  nextRetryAt,
  PermanentFailure,
  resolvePolicy,
  seededRandom,
  Throttled,
  TransientFailure,
} from './index.js';

describe('classifyFailure', () => {
  it('maps control-flow errors and HTTP-shaped errors', () => {
    expect(classifyFailure(new TransientFailure('reset')).failureClass).toBe('TRANSIENT');
    expect(classifyFailure(new Throttled(1500))).toMatchObject({
      failureClass: 'THROTTLED',
      retryAfterMs: 1500,
    });
    expect(classifyFailure(new PermanentFailure('bad')).failureClass).toBe('PERMANENT');
    expect(classifyFailure({ status: 429, retryAfterMs: 200 })).toMatchObject({
      failureClass: 'THROTTLED',
      retryAfterMs: 200,
    });
    expect(classifyFailure({ statusCode: 422 }).failureClass).toBe('PERMANENT');
    expect(classifyFailure(new Error('??')).failureClass).toBe('UNKNOWN');
    expect(classifyFailure('boom').failureClass).toBe('UNKNOWN');
  });

  it("knows another copy's classes by their field and name, not a look-alike", () => {
    // What a handler built against a second copy of the SDK throws: same shape, other class.
    class PermanentFailure extends Error {
      readonly failureClass = 'PERMANENT' as const;
      override name = 'PermanentFailure';
    }
    class Throttled extends Error {
      readonly failureClass = 'THROTTLED' as const;
      override name = 'Throttled';
      readonly retryAfterMs = 700;
    }
    expect(classifyFailure(new PermanentFailure('bad')).failureClass).toBe('PERMANENT');
    expect(classifyFailure(new Throttled('slow'))).toMatchObject({
      failureClass: 'THROTTLED',
      retryAfterMs: 700,
    });
    const lookalike = Object.assign(new Error('x'), { failureClass: 'PERMANENT' });
    expect(classifyFailure(lookalike).failureClass).toBe('UNKNOWN');
  });
});

describe('nextRetryAt', () => {
  const policy = resolvePolicy({ default: { baseMs: 100, capMs: 1_000, maxAttempts: 20 } });

  it('sends permanent failures straight to the DLQ and stops at maxAttempts', () => {
    expect(nextRetryAt(0, 1, policy, 'PERMANENT', null, Math.random)).toEqual({
      retry: false,
      reason: 'PERMANENT',
    });
    expect(nextRetryAt(0, 20, policy, 'TRANSIENT', null, Math.random)).toEqual({
      retry: false,
      reason: 'EXHAUSTED',
    });
  });

  it('is capped and fully jittered: uniform over [0, min(cap, base·2^(n-1))] (seeded, 20k draws)', () => {
    const rnd = seededRandom(42);
    for (const attempt of [1, 3, 10]) {
      const ceiling = Math.min(1_000, 100 * 2 ** (attempt - 1));
      const draws = Array.from({ length: 20_000 }, () => {
        const d = nextRetryAt(0, attempt, policy, 'TRANSIENT', null, rnd);
        if (!d.retry) throw new Error('expected a retry');
        return d.delayMs;
      });
      expect(Math.max(...draws)).toBeLessThanOrEqual(ceiling);
      expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
      const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
      expect(Math.abs(mean - ceiling / 2)).toBeLessThan(ceiling * 0.02);
      // Every decile of [0, ceiling] gets its share (no clumping at the edges).
      const deciles = new Array<number>(10).fill(0);
      for (const d of draws) deciles[Math.min(9, Math.floor((d / (ceiling + 1)) * 10))]!++;
      for (const n of deciles) expect(n / draws.length).toBeGreaterThan(0.08);
    }
  });

  it('never retries a throttled failure before its Retry-After', () => {
    const rnd = seededRandom(7);
    for (let i = 0; i < 5_000; i++) {
      const d = nextRetryAt(1_000, 1 + (i % 5), policy, 'THROTTLED', 2_500, rnd);
      if (!d.retry) throw new Error('expected a retry');
      expect(d.atMs).toBeGreaterThanOrEqual(3_500);
    }
  });

  it('backs off harder on throttling by default', () => {
    expect(DEFAULT_RETRY_POLICY.perClass.THROTTLED!.baseMs!).toBeGreaterThan(
      DEFAULT_RETRY_POLICY.default.baseMs,
    );
  });

  it('rejects an invalid policy with a stable code', () => {
    expect(() => resolvePolicy({ default: { baseMs: -1, capMs: 1, maxAttempts: 1 } })).toThrow(
      expect.objectContaining({ code: 'SCHED_E_INVALID_RETRY_POLICY' }),
    );
  });
});

describe('per-job policies', () => {
  it('maps the wire shape to a layer and validates it', async () => {
    const { fromWirePolicy } = await import('./index.js');
    const layer = fromWirePolicy({
      baseMs: 10,
      capMs: 100,
      overrides: [{ failureClass: 'THROTTLED', baseMs: 50, capMs: null, maxAttempts: 3 }],
    });
    const p = resolvePolicy(layer);
    expect(p.default).toMatchObject({ baseMs: 10, capMs: 100 });
    expect(p.perClass.THROTTLED).toMatchObject({ baseMs: 50, maxAttempts: 3 });
    expect(() => fromWirePolicy({ baseMs: -5, capMs: 1, overrides: [] })).toThrow(/baseMs/);
  });
  it('makes the job budget the budget of every retriable class, not of PERMANENT', async () => {
    const { withMaxAttempts } = await import('./index.js');
    const p = withMaxAttempts(resolvePolicy(), 2);
    expect(nextRetryAt(0, 2, p, 'THROTTLED', null, Math.random)).toEqual({
      retry: false,
      reason: 'EXHAUSTED',
    });
    expect(nextRetryAt(0, 1, p, 'TRANSIENT', null, Math.random).retry).toBe(true);
    expect(nextRetryAt(0, 1, p, 'PERMANENT', null, Math.random).retry).toBe(false);
  });
});
