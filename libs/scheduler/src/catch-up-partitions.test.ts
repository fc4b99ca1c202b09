import { describe, expect, it } from 'vitest';
import { partitionsToDrain } from './catch-up.js';
import { wheelIndexFactory } from './wheel-index.js';

describe('partitionsToDrain (which partitions a catch-up round may claim from)', () => {
  const make = (partition: number, dues: number[]) => {
    const index = wheelIndexFactory()();
    dues.forEach((d, i) => index.upsert(`j${partition}-${i}`, d));
    return { partition, index, nextDueMs: () => index.nextDueMs() };
  };

  it('leaves out a partition whose wheel is behind by more than the grace, keeps the others', () => {
    const now = Date.now();
    const behind = make(0, [now - 5_000, now + 60_000]); // a burst still being fired
    const onTime = make(1, [now - 500, now + 10]); // late by less than the grace
    const empty = make(2, []);
    const future = make(3, [now + 3_600_000]);
    expect(partitionsToDrain([behind, onTime, empty, future], now, 2_000).map((r) => r.partition)).toEqual([
      1, 2, 3,
    ]);
  });

  it('drains none while an assignment is being set up (a partition not yet claimed may hold higher priorities)', () => {
    const now = Date.now();
    const ready = make(0, [now + 60_000]);
    expect(partitionsToDrain([ready], now, 2_000, true)).toEqual([]);
    expect(partitionsToDrain([ready], now, 2_000, false)).toEqual([ready]);
  });

  it('takes the partition back once its wheel has caught up', () => {
    const now = Date.now();
    const p = make(0, [now - 5_000]);
    expect(partitionsToDrain([p], now, 2_000)).toEqual([]);
    p.index.advance(now, 100);
    expect(partitionsToDrain([p], now, 2_000)).toEqual([p]);
  });
});
