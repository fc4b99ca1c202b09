import { describe, expect, it } from 'vitest';
import { FairSlots, priorityClass, type PriorityClass } from './fair-slots.js';

const W = [7, 2, 1] as const;

/** Queues `n` acquires of one tenant and class; each granted one appends `label` to `order`. */
function queue(s: FairSlots, tenant: string, cls: PriorityClass, n: number, order: string[], label = tenant) {
  for (let i = 0; i < n; i++) void s.acquire(tenant, cls).then(() => order.push(label));
}

/** Lets granted promises run their callbacks. */
const settle = () => new Promise((r) => setImmediate(r));

/** Releases one slot of whoever was granted last, `times` times, a turn apart. */
async function drain(s: FairSlots, order: string[], times: number, tenantOf = (l: string) => l) {
  for (let i = 0; i < times; i++) {
    const last = order[order.length - 1]!;
    s.release(tenantOf(last));
    await settle();
  }
}

describe('FairSlots', () => {
  it('is a counter without contention, and an extra release makes no room', async () => {
    const s = new FairSlots({ size: 2, weights: W });
    await s.acquire('a', 1);
    await s.acquire('b', 1);
    expect(s.inUse).toBe(2);
    const order: string[] = [];
    queue(s, 'a', 1, 1, order);
    expect(s.waiting).toBe(1);
    s.release('b');
    await settle();
    expect(order).toEqual(['a']);
    expect(s.inUse).toBe(2);
    s.release('a');
    s.release('a');
    s.release('a');
    expect(s.inUse).toBe(0);
    expect(s.heldBy('a')).toBe(0);
  });

  it('serves tenants of one class round robin, each in arrival order', async () => {
    const s = new FairSlots({ size: 1, weights: W });
    await s.acquire('x', 1);
    const order: string[] = [];
    for (let i = 1; i <= 5; i++) void s.acquire('A', 1).then(() => order.push(`A${i}`));
    for (let i = 1; i <= 2; i++) void s.acquire('B', 1).then(() => order.push(`B${i}`));
    s.release('x');
    await settle();
    await drain(s, order, 6, (l) => l[0]!);
    expect(order).toEqual(['A1', 'B1', 'A2', 'B2', 'A3', 'A4', 'A5']);
  });

  it('splits contended slots between classes by weight, and never starves the low class', async () => {
    const s = new FairSlots({ size: 1, weights: W });
    await s.acquire('x', 1);
    const order: string[] = [];
    queue(s, 't', 0, 200, order, 'high');
    queue(s, 't', 1, 200, order, 'normal');
    queue(s, 't', 2, 200, order, 'low');
    expect(s.waitingByClass()).toEqual([200, 200, 200]);
    s.release('x');
    await settle();
    await drain(s, order, 99, () => 't');
    const count = (l: string) => order.filter((o) => o === l).length;
    expect(order).toHaveLength(100);
    expect(count('high')).toBe(70);
    expect(count('normal')).toBe(20);
    expect(count('low')).toBe(10);
    // Interleaved, not in runs: the low class is served within every ten grants.
    for (let i = 0; i + 10 <= 100; i += 10) expect(order.slice(i, i + 10)).toContain('low');
  });

  it('gives a class that starts waiting its share from then on, not credit for the time it was idle', async () => {
    const s = new FairSlots({ size: 1, weights: W });
    await s.acquire('x', 1);
    const order: string[] = [];
    queue(s, 't', 0, 300, order, 'high');
    s.release('x');
    await settle();
    await drain(s, order, 99, () => 't');
    queue(s, 't', 2, 50, order, 'low');
    const before = order.length;
    await drain(s, order, 20, () => 't');
    const after = order.slice(before);
    expect(after.filter((o) => o === 'low').length).toBeGreaterThanOrEqual(1);
    expect(after.filter((o) => o === 'low').length).toBeLessThanOrEqual(3);
  });

  it('holds a tenant at its cap while others use the free slots', async () => {
    const s = new FairSlots({ size: 4, weights: W, tenantCap: 2, tenantCaps: { big: 1, free: 0 } });
    expect(s.capOf('big')).toBe(1);
    expect(s.capOf('other')).toBe(2);
    expect(s.capOf('free')).toBe(Infinity);
    await s.acquire('big', 1);
    const order: string[] = [];
    queue(s, 'big', 1, 2, order);
    await settle();
    expect(order).toEqual([]);
    expect(s.inUse).toBe(1);
    await s.acquire('other', 1);
    await s.acquire('other', 1);
    queue(s, 'other', 1, 1, order);
    await settle();
    expect(order).toEqual([]);
    await s.acquire('free', 1);
    expect(s.inUse).toBe(4);
    // A slot freed by `free` goes to nobody (both waiters' tenants are at their caps).
    s.release('free');
    await settle();
    expect(order).toEqual([]);
    expect(s.inUse).toBe(3);
    s.release('big');
    await settle();
    expect(order).toEqual(['big']);
    expect(s.heldBy('big')).toBe(1);
    s.release('other');
    await settle();
    expect(order).toEqual(['big', 'other']);
    expect(s.waiting).toBe(1);
  });

  it('maps priorities to classes and refuses options that admit nobody', () => {
    expect([priorityClass(5), priorityClass(0), priorityClass(-3)]).toEqual([0, 1, 2]);
    expect(() => new FairSlots({ size: 0, weights: W })).toThrow(/size must be a positive integer/);
    expect(() => new FairSlots({ size: 1, weights: [1, 0, 1] })).toThrow(/three positive integers/);
    expect(() => new FairSlots({ size: 1, weights: [1, 1] as unknown as [number, number, number] })).toThrow(
      /three positive integers/,
    );
    expect(() => new FairSlots({ size: 1, weights: W, tenantCap: -1 })).toThrow(/tenantCap/);
    expect(() => new FairSlots({ size: 1, weights: W, tenantCaps: { a: 1.5 } })).toThrow(/tenant "a"/);
  });
});

describe('FairSlots.whenWaitingBelow', () => {
  it('resolves at once with room, else once grants bring the waiters below the bound', async () => {
    const s = new FairSlots({ size: 1, weights: W });
    await s.whenWaitingBelow(2);
    await s.acquire('a', 1);
    const order: string[] = [];
    queue(s, 'a', 1, 2, order);
    let room = false;
    void s.whenWaitingBelow(2).then(() => (room = true));
    await settle();
    expect(room).toBe(false);
    s.release('a');
    await settle();
    expect(room).toBe(true);
    expect(order).toEqual(['a']);
  });
});
