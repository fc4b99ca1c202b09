import { describe, expect, it } from 'vitest';
import {
  AdmissionWithdrawn,
  FairSlots,
  priorityClass,
  WaiterGroup,
  type PriorityClass,
} from './fair-slots.js';

const W = [7, 2, 1] as const;

/** Queues `n` acquires of one tenant, queue and class; each granted one appends `label` to `order`. */
function queue(
  s: FairSlots,
  tenant: string,
  cls: PriorityClass,
  n: number,
  order: string[],
  label = tenant,
  q = 'q',
) {
  for (let i = 0; i < n; i++) void s.acquire(tenant, q, cls).then(() => order.push(label));
}

/** Lets granted promises run their callbacks. */
const settle = () => new Promise((r) => setImmediate(r));

/** Releases one slot of whoever was granted last, `times` times, a turn apart. */
async function drain(s: FairSlots, order: string[], times: number, tenantOf = (l: string) => l) {
  for (let i = 0; i < times; i++) {
    const last = order[order.length - 1]!;
    s.release(tenantOf(last), 'q');
    await settle();
  }
}

/** A clock and timers the test moves by hand. */
function manualTime() {
  let now = 0;
  let timers: { at: number; fn: () => void }[] = [];
  return {
    nowMs: () => now,
    setTimer: (fn: () => void, ms: number) => {
      const t = { at: now + ms, fn };
      timers.push(t);
      return t;
    },
    clearTimer: (t: unknown) => {
      timers = timers.filter((x) => x !== t);
    },
    advance(ms: number) {
      now += ms;
      const due = timers.filter((t) => t.at <= now);
      timers = timers.filter((t) => t.at > now);
      for (const t of due) t.fn();
    },
  };
}

describe('FairSlots', () => {
  it('is a counter without contention, and an extra release makes no room', async () => {
    const s = new FairSlots({ size: 2, weights: W });
    await s.acquire('a', 'q', 1);
    await s.acquire('b', 'q', 1);
    expect(s.inUse).toBe(2);
    const order: string[] = [];
    queue(s, 'a', 1, 1, order);
    expect(s.waiting).toBe(1);
    s.release('b', 'q');
    await settle();
    expect(order).toEqual(['a']);
    expect(s.inUse).toBe(2);
    s.release('a', 'q');
    s.release('a', 'q');
    s.release('a', 'q');
    expect(s.inUse).toBe(0);
    expect(s.heldBy('a')).toBe(0);
  });

  it('serves tenants of one class round robin, each in arrival order', async () => {
    const s = new FairSlots({ size: 1, weights: W });
    await s.acquire('x', 'q', 1);
    const order: string[] = [];
    for (let i = 1; i <= 5; i++) void s.acquire('A', 'q', 1).then(() => order.push(`A${i}`));
    for (let i = 1; i <= 2; i++) void s.acquire('B', 'q', 1).then(() => order.push(`B${i}`));
    s.release('x', 'q');
    await settle();
    await drain(s, order, 6, (l) => l[0]!);
    expect(order).toEqual(['A1', 'B1', 'A2', 'B2', 'A3', 'A4', 'A5']);
  });

  it('splits contended slots between classes by weight, and never starves the low class', async () => {
    const s = new FairSlots({ size: 1, weights: W });
    await s.acquire('x', 'q', 1);
    const order: string[] = [];
    queue(s, 't', 0, 200, order, 'high');
    queue(s, 't', 1, 200, order, 'normal');
    queue(s, 't', 2, 200, order, 'low');
    expect(s.waitingByClass()).toEqual([200, 200, 200]);
    s.release('x', 'q');
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
    await s.acquire('x', 'q', 1);
    const order: string[] = [];
    queue(s, 't', 0, 300, order, 'high');
    s.release('x', 'q');
    await settle();
    await drain(s, order, 99, () => 't');
    queue(s, 't', 2, 50, order, 'low');
    const before = order.length;
    await drain(s, order, 20, () => 't');
    const low = order.slice(before).filter((o) => o === 'low').length;
    expect(low).toBeGreaterThanOrEqual(1);
    expect(low).toBeLessThanOrEqual(3);
  });

  it('gives no credit to a class that waited with every tenant at its cap', async () => {
    const s = new FairSlots({ size: 2, weights: W, tenantCaps: { capped: 1 } });
    await s.acquire('capped', 'q', 1);
    const order: string[] = [];
    // The low class waits, its only tenant capped, while high jobs of another tenant run a long time.
    void s.acquire('capped', 'q', 2).then(() => order.push('capped-low'));
    queue(s, 'h', 0, 200, order, 'high');
    await settle();
    expect(order).toEqual(['high']);
    await drain(s, order, 100, () => 'h');
    // A new low tenant arrives: the low class gets its share, not a run of grants ahead of high.
    queue(s, 'u', 2, 30, order, 'low');
    const before = order.length;
    for (let i = 0; i < 30; i++) {
      const last = order[order.length - 1]!;
      s.release(last === 'low' ? 'u' : 'h', 'q');
      await settle();
    }
    expect(order.slice(before).filter((o) => o === 'low').length).toBeLessThanOrEqual(5);
  });

  it('holds a tenant at its cap while others use the free slots', async () => {
    const s = new FairSlots({ size: 4, weights: W, tenantCap: 2, tenantCaps: { big: 1, free: 0 } });
    expect(s.capOf('big')).toBe(1);
    expect(s.capOf('other')).toBe(2);
    expect(s.capOf('free')).toBe(Infinity);
    await s.acquire('big', 'q', 1);
    const order: string[] = [];
    queue(s, 'big', 1, 2, order);
    await settle();
    expect(order).toEqual([]);
    expect(s.inUse).toBe(1);
    await s.acquire('other', 'q', 1);
    await s.acquire('other', 'q', 1);
    queue(s, 'other', 1, 1, order);
    await settle();
    expect(order).toEqual([]);
    await s.acquire('free', 'q', 1);
    expect(s.inUse).toBe(4);
    // A slot freed by `free` goes to nobody (both waiters' tenants are at their caps).
    s.release('free', 'q');
    await settle();
    expect(order).toEqual([]);
    expect(s.inUse).toBe(3);
    s.release('big', 'q');
    await settle();
    expect(order).toEqual(['big']);
    expect(s.heldBy('big')).toBe(1);
    s.release('other', 'q');
    await settle();
    expect(order).toEqual(['big', 'other']);
    expect(s.waiting).toBe(1);
  });

  it("bounds a queue's own executions, and a capped tenant's waiters do not take the queue's slots", async () => {
    const s = new FairSlots({ size: 4, weights: W, tenantCaps: { T: 1 } });
    s.defineQueue('small', { concurrency: 2 });
    await s.acquire('T', 'other-queue', 1); // T is at its cap elsewhere
    const order: string[] = [];
    queue(s, 'T', 1, 3, order, 'T', 'small');
    queue(s, 'U', 1, 3, order, 'U', 'small');
    await settle();
    // U runs at the queue's bound although T's jobs came first; T holds nothing while it waits.
    expect(order).toEqual(['U', 'U']);
    expect(s.heldByQueue('small')).toBe(2);
    s.release('U', 'small');
    await settle();
    expect(order).toEqual(['U', 'U', 'U']);
    s.release('T', 'other-queue');
    s.release('U', 'small');
    await settle();
    expect(order).toEqual(['U', 'U', 'U', 'T']);
    expect(() => s.defineQueue('bad', { concurrency: 0 })).toThrow(/concurrency must be a positive integer/);
    expect(() => s.defineQueue('bad', { rateBurst: 2 })).toThrow(/rateBurst needs ratePerSec/);
  });

  it("starts a queue's jobs no faster than its rate, holding no slot while they wait", async () => {
    const t = manualTime();
    const s = new FairSlots({ size: 8, weights: W, ...t });
    s.defineQueue('slow', { ratePerSec: 4 });
    const order: string[] = [];
    queue(s, 'a', 1, 5, order, 'slow', 'slow');
    queue(s, 'a', 1, 2, order, 'fast', 'fast');
    await settle();
    expect(order).toEqual(['slow', 'fast', 'fast']);
    expect(s.inUse).toBe(3);
    for (const [ms, n] of [
      [100, 1],
      [150, 2],
      [250, 3],
      [250, 4],
      [250, 5],
    ] as const) {
      t.advance(ms);
      await settle();
      expect(order.filter((o) => o === 'slow')).toHaveLength(n);
    }
    // Under contention as well: the rate is checked when a slot is granted, not before.
    const u = manualTime();
    const busy = new FairSlots({ size: 1, weights: W, ...u });
    busy.defineQueue('slow', { ratePerSec: 2 });
    await busy.acquire('a', 'other', 1);
    const got: number[] = [];
    for (let i = 0; i < 3; i++) void busy.acquire('a', 'slow', 1).then(() => got.push(u.nowMs()));
    u.advance(2_000); // the rate would allow all three by now, but the slot is taken
    busy.release('a', 'other');
    await settle();
    busy.release('a', 'slow'); // the slot is free, but the next start is due only at 2,500
    await settle();
    expect(got).toEqual([2_000]);
    u.advance(500);
    await settle();
    busy.release('a', 'slow');
    u.advance(500);
    await settle();
    expect(got).toEqual([2_000, 2_500, 3_000]);
  });

  it('withdraws the waiters of a group: they reject and hold nothing; the granted keep their slots', async () => {
    const s = new FairSlots({ size: 2, weights: W });
    await s.acquire('a', 'q', 1);
    const g = new WaiterGroup();
    const granted = s.acquire('b', 'q', 1, g);
    await granted;
    const p1 = s.acquire('b', 'q', 1, g);
    const p2 = s.acquire('b', 'q', 2, g);
    const order: string[] = [];
    queue(s, 'c', 1, 1, order);
    g.withdraw(new Error('stale'));
    await expect(p1).rejects.toBeInstanceOf(AdmissionWithdrawn);
    await expect(p2).rejects.toBeInstanceOf(AdmissionWithdrawn);
    expect(s.waiting).toBe(1);
    expect(s.waitingByClass()).toEqual([0, 1, 0]);
    s.release('a', 'q');
    await settle();
    expect(order).toEqual(['c']);
    expect(s.heldBy('b')).toBe(1);
    await expect(s.acquire('d', 'q', 1, g)).rejects.toBeInstanceOf(AdmissionWithdrawn);
  });

  it('maps priorities to classes and refuses options that admit nobody', () => {
    expect([priorityClass(5), priorityClass(0), priorityClass(-3)]).toEqual([0, 1, 2]);
    expect(() => new FairSlots({ size: 0, weights: W })).toThrow(/size must be a positive integer/);
    expect(() => new FairSlots({ size: 1, weights: [1, 0, 1] })).toThrow(/three positive integers/);
    expect(() => new FairSlots({ size: 1, weights: [1001, 1, 1] })).toThrow(/up to 1000/);
    expect(() => new FairSlots({ size: 1, weights: [1, 1] as unknown as [number, number, number] })).toThrow(
      /three positive integers/,
    );
    expect(() => new FairSlots({ size: 1, weights: W, tenantCap: -1 })).toThrow(/tenantCap/);
    expect(() => new FairSlots({ size: 1, weights: W, tenantCaps: { a: 1.5 } })).toThrow(/tenant "a"/);
  });
});
