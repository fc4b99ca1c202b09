import { describe, expect, it } from 'vitest';
import { RateWindow } from './rate-window.js';

describe('RateWindow', () => {
  it('never grants more than the limit in any one-second window', () => {
    let now = 1_000_000;
    const w = new RateWindow(100, () => now);
    const grants: { t: number; n: number }[] = [];
    for (let i = 0; i < 500; i++) {
      now += 7 + (i % 13);
      const n = w.take(17);
      if (n > 0) grants.push({ t: now, n });
    }
    for (const g of grants) {
      const inWindow = grants.filter((x) => x.t > g.t - 1000 && x.t <= g.t).reduce((a, x) => a + x.n, 0);
      expect(inWindow).toBeLessThanOrEqual(100);
    }
    const total = grants.reduce((a, g) => a + g.n, 0);
    const seconds = (now - 1_000_000) / 1000;
    expect(total / seconds).toBeGreaterThan(80); // and it does grant close to the rate
  });
  it('refunds unused grants', () => {
    const w = new RateWindow(10, () => 0);
    expect(w.take(10)).toBe(10);
    w.refund(4);
    expect(w.take(10)).toBe(4);
  });
  it('says how much it would grant without taking it', () => {
    let now = 0;
    const w = new RateWindow(10, () => now);
    expect(w.available()).toBe(10);
    expect(w.take(6)).toBe(6);
    expect(w.available()).toBe(4);
    expect(w.available()).toBe(4);
    now += 1_200; // the window has moved past the grant
    expect(w.available()).toBe(10);
  });
});
