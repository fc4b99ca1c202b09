import { describe, expect, it } from 'vitest';
import { Admission, RateShare, admissionStep } from './admission.js';

describe('admissionStep', () => {
  it('pauses a queue at the high mark and resumes it only at the low one', () => {
    let paused = new Set<string>();
    const run = (n: number) => {
      const s = admissionStep(paused, new Map([['q', n]]), 100, 50);
      paused = s.paused;
      return { paused: paused.has('q'), pausedNow: s.pausedNow, resumedNow: s.resumedNow };
    };
    expect(run(99)).toEqual({ paused: false, pausedNow: [], resumedNow: [] });
    expect(run(100)).toEqual({ paused: true, pausedNow: ['q'], resumedNow: [] });
    expect(run(70).paused).toBe(true); // between the marks: stays paused
    expect(run(51).paused).toBe(true);
    expect(run(50)).toEqual({ paused: false, pausedNow: [], resumedNow: ['q'] });
    expect(run(80).paused).toBe(false); // between the marks: stays running
  });
  it('resumes a paused queue that has nothing in flight any more (absent from the counts)', () => {
    const s = admissionStep(new Set(['gone']), new Map(), 10, 5);
    expect([...s.paused]).toEqual([]);
    expect(s.resumedNow).toEqual(['gone']);
  });
});

describe('RateShare', () => {
  it('lets through one second of its share at once, then the share a second', () => {
    const r = new RateShare(10, 0);
    expect(r.room(0)).toBe(10);
    r.take(10, 0);
    expect(r.room(0)).toBe(0);
    expect(r.room(500)).toBe(5);
    expect(r.room(5_000)).toBe(10); // never more than one second's worth
  });
  it('holds at least one job, so a share under one a second still dispatches now and then', () => {
    const r = new RateShare(0.25, 0);
    expect(r.room(0)).toBe(1);
    r.take(1, 0);
    expect(r.room(3_000)).toBe(0);
    expect(r.room(4_000)).toBe(1);
  });
  it('keeps the tokens held across a new share, up to the new size', () => {
    const r = new RateShare(100, 0);
    r.take(40, 0);
    r.reshare(20, 0);
    expect(r.room(0)).toBe(20);
  });
});

describe('Admission with a dispatch rate', () => {
  const make = (owned: number[], total: number, clock: { t: number }, rates: Map<string, number>) => {
    const pool = {
      query: async (q: string) =>
        q.includes('max_dispatch_per_second')
          ? { rows: [...rates].map(([queue, rate]) => ({ queue, rate })) }
          : { rows: [] },
    };
    return new Admission({
      pool: pool as never,
      metrics: { queueUnstarted: { set() {} }, queueAdmissionPaused: { set() {} } } as never,
      log: { warn() {}, info() {} } as never,
      maxUnstarted: 0,
      claimBatchSize: 500,
      owned: () => owned,
      totalPartitions: () => total,
      now: () => clock.t,
    });
  };
  it('limits a rated queue to its share by owned partitions and leaves the others alone', async () => {
    const clock = { t: 0 };
    const a = make([0, 1, 2], 12, clock, new Map([['slow', 40]]));
    await a.once();
    expect(a.roomFor('slow')).toBe(10); // 40/s x 3/12
    expect(a.roomFor('fast')).toBe(Infinity);
    expect(a.limits()).toEqual({ queues: ['slow'], rooms: [10], otherRoom: 500 });
    a.onClaimed(Array.from({ length: 10 }, () => ({ queue: 'slow' })));
    expect(a.full()).toEqual(['slow']);
    clock.t = 300;
    expect(a.roomFor('slow')).toBe(3);
  });
  it('gives a paused queue (rate 0) no room, and its rate back when resumed', async () => {
    const clock = { t: 0 };
    const rates = new Map([['held', 0]]);
    const a = make([0, 1], 2, clock, rates);
    await a.once();
    expect(a.roomFor('held')).toBe(0);
    expect(a.full()).toEqual(['held']);
    clock.t = 60_000;
    expect(a.roomFor('held')).toBe(0);
    rates.set('held', 50);
    await a.once();
    clock.t = 61_000;
    expect(a.roomFor('held')).toBe(50);
  });
  it('claims without limits once no queue has a rate', async () => {
    const rates = new Map([['slow', 40]]);
    const a = make([0], 1, { t: 0 }, rates);
    await a.once();
    rates.clear();
    await a.once();
    expect(a.limits()).toEqual({ queues: [], rooms: [], otherRoom: null });
  });
});
