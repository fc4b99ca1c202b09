import { describe, expect, it } from 'vitest';
import { Slots } from './slots.js';

describe('Slots', () => {
  it('admits at most size holders and serves waiters in order', async () => {
    const s = new Slots(2);
    await s.acquire();
    await s.acquire();
    expect(s.inUse).toBe(2);
    const order: number[] = [];
    const a = s.acquire().then(() => order.push(1));
    const b = s.acquire().then(() => order.push(2));
    expect(s.waiting).toBe(2);
    await Promise.resolve();
    expect(order).toEqual([]);
    s.release();
    await a;
    expect(order).toEqual([1]);
    expect(s.inUse).toBe(2);
    s.release();
    await b;
    expect(order).toEqual([1, 2]);
    s.release();
    s.release();
    expect(s.inUse).toBe(0);
    // An extra release never makes room beyond the size.
    s.release();
    expect(s.inUse).toBe(0);
  });

  it('refuses a size that admits nobody', () => {
    expect(() => new Slots(0)).toThrow(/positive integer/);
    expect(() => new Slots(1.5)).toThrow(/positive integer/);
  });
});
