import { describe, expect, it } from 'vitest';
import { nextConfirmRate } from './drain.js';

describe('drain confirmation after one that did not hold', () => {
  it('runs at what the failed confirmation started per second', () => {
    expect(nextConfirmRate(10_736, 9_650.4)).toBe(9_650);
  });

  it('steps down at least 10 %, even when nearly all of it started', () => {
    expect(nextConfirmRate(10_000, 9_990)).toBe(9_000);
    expect(nextConfirmRate(10_000, 12_000)).toBe(9_000);
  });

  it('steps down at most 20 %, even when the failed run stalled', () => {
    expect(nextConfirmRate(10_000, 1_200)).toBe(8_000);
    expect(nextConfirmRate(10_000, 0)).toBe(8_000);
  });
});
