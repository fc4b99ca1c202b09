import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '@sched/logging';
import { PeriodicCount } from './backlog-counts.js';

function setup(everyMs: number) {
  const shown: number[][] = [];
  const reads: { partitions: number[]; resolve: (v: number) => void; reject: (e: Error) => void }[] = [];
  let cleared = 0;
  const warnings: string[] = [];
  const log = { warn: (_o: unknown, msg: string) => warnings.push(msg) } as unknown as Logger;
  const count = new PeriodicCount<number>({
    what: 'things',
    everyMs,
    log,
    read: (partitions) =>
      new Promise<number>((resolve, reject) => reads.push({ partitions, resolve, reject })),
    show: (n) => shown.push([n]),
    clear: () => cleared++,
  });
  return { count, shown, reads, warnings, cleared: () => cleared };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('PeriodicCount', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => vi.useRealTimers());

  it('counts at most every everyMs, one count at a time', async () => {
    const t = setup(1_000);
    t.count.count([0, 1]);
    t.count.count([0, 1]); // a count is running
    expect(t.reads).toHaveLength(1);
    expect(t.reads[0]!.partitions).toEqual([0, 1]);
    t.reads[0]!.resolve(7);
    await settle();
    expect(t.shown).toEqual([[7]]);
    vi.setSystemTime(1_000_999);
    t.count.count([0, 1]); // too soon
    expect(t.reads).toHaveLength(1);
    vi.setSystemTime(1_001_000);
    t.count.count([0, 1]);
    expect(t.reads).toHaveLength(2);
  });

  it('drops a count that lands after partitions left, and counts again at once', async () => {
    const t = setup(60_000);
    t.count.count([0, 1]);
    t.count.forget();
    expect(t.cleared()).toBe(1);
    t.reads[0]!.resolve(5);
    await settle();
    expect(t.shown).toEqual([]);
    t.count.count([1]);
    expect(t.reads.map((r) => r.partitions)).toEqual([[0, 1], [1]]);
  });

  it('clears when there is nothing to count, never counts with everyMs 0, and logs a failed count', async () => {
    const t = setup(1_000);
    t.count.count([0], true);
    expect(t.reads).toHaveLength(0);
    expect(t.cleared()).toBe(1);
    t.count.count([0]);
    t.reads[0]!.reject(new Error('connection refused'));
    await settle();
    expect(t.warnings).toEqual(['counting things failed']);
    vi.setSystemTime(1_002_000);
    t.count.count([0]); // the failed count did not wedge it
    expect(t.reads).toHaveLength(2);

    const off = setup(0);
    off.count.count([0]);
    off.count.count([0], true);
    expect(off.reads).toHaveLength(0);
  });
});
