import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jitterOffsetMs, MAX_JITTER_WINDOW_MS, RecurrenceError } from './index';

describe('jitterOffsetMs', () => {
  it('is a function of the key, within [0, windowMs]', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 0, max: MAX_JITTER_WINDOW_MS }), (key, windowMs) => {
        const j = jitterOffsetMs(key, windowMs);
        expect(Number.isSafeInteger(j)).toBe(true);
        expect(j).toBeGreaterThanOrEqual(0);
        expect(j).toBeLessThanOrEqual(windowMs);
        expect(jitterOffsetMs(key, windowMs)).toBe(j);
      }),
    );
    expect(jitterOffsetMs('anything', 0)).toBe(0);
  });

  it('is pinned: the same key gives the same offset in every process and version', () => {
    // SHA-256 of the key, first 48 bits, modulo windowMs + 1 (cross-checked with Python's hashlib).
    expect(jitterOffsetMs('sch-1@1772953200000', 60_000)).toBe(983);
    expect(jitterOffsetMs('sch-2@1772953200000', 86_400_000)).toBe(26_899_272);
  });

  it('spreads keys evenly over the window, both ends included', () => {
    const counts = new Array<number>(10).fill(0);
    for (let i = 0; i < 20_000; i++) counts[jitterOffsetMs(`schedule-${i % 97}@${i}`, 9)]!++;
    for (const c of counts) expect(Math.abs(c - 2000)).toBeLessThan(200);
  });

  it('rejects a bad window with SCHED_E_INVALID_ARGUMENT', () => {
    for (const w of [-1, 1.5, Number.NaN, MAX_JITTER_WINDOW_MS + 1]) {
      expect(() => jitterOffsetMs('k', w)).toThrow(RecurrenceError);
      try {
        jitterOffsetMs('k', w);
      } catch (err) {
        expect((err as RecurrenceError).code).toBe('SCHED_E_INVALID_ARGUMENT');
      }
    }
  });
});
