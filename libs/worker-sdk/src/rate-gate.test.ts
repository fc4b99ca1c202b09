import { describe, expect, it } from 'vitest';
import { RateGate } from './rate-gate.js';

describe('RateGate', () => {
  it('spaces starts 1000 / perSec ms apart, in the order they were booked', () => {
    let now = 1_000;
    const g = new RateGate(4, 1, () => now);
    expect([g.reserve(), g.reserve(), g.reserve()]).toEqual([0, 250, 500]);
    now += 2_000; // idle: no credit beyond the burst
    expect([g.reserve(), g.reserve()]).toEqual([0, 250]);
  });

  it('says how long until the next start without booking it', () => {
    let now = 0;
    const g = new RateGate(2, 1, () => now);
    expect(g.waitMs()).toBe(0);
    expect(g.waitMs()).toBe(0);
    expect(g.reserve()).toBe(0);
    expect(g.waitMs()).toBe(500);
    now = 400;
    expect(g.waitMs()).toBe(100);
    now = 500;
    expect(g.waitMs()).toBe(0);
  });

  it('lets a burst go at once, then the rate', () => {
    let now = 0;
    const g = new RateGate(10, 3, () => now);
    expect([g.reserve(), g.reserve(), g.reserve(), g.reserve(), g.reserve()]).toEqual([0, 0, 0, 100, 200]);
    now = 150;
    expect(g.reserve()).toBe(150);
  });

  it('refuses a rate or burst that admits nobody', () => {
    expect(() => new RateGate(0)).toThrow(/perSec must be a number >= 0.001/);
    expect(() => new RateGate(0.0001)).toThrow(/perSec/);
    expect(() => new RateGate(Infinity)).toThrow(/perSec/);
    expect(() => new RateGate(5, 0)).toThrow(/burst must be a positive integer/);
  });
});
