import { describe, expect, it } from 'vitest';
import { TimingWheel, TimingWheelError, type WheelEntry, WheelErrorCode, type WheelHandle } from './index';

const T0 = 1_750_000_000_000;

function drain(wheel: TimingWheel, nowMs: number, maxBatch = 1_000): WheelEntry[] {
  const out: WheelEntry[] = [];
  for (let calls = 0; calls < 100_000; calls++) {
    const batch = wheel.advance(nowMs, maxBatch);
    out.push(...batch.toArray());
    const next = wheel.nextDueMs();
    if (next === undefined || next > nowMs) return out;
  }
  throw new Error('advance did not settle');
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TimingWheelError);
    expect((err as TimingWheelError).retriable).toBe(false);
    return (err as TimingWheelError).code;
  }
  return undefined;
}

describe('TimingWheel', () => {
  it('follows the worked example of its doc comment', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    wheel.add('a', 700);
    wheel.add('b', 5_000);
    wheel.add('c', 3_600_000);
    expect(wheel.advance(1_000, 100).toArray()).toEqual([{ id: 'a', dueMs: 700 }]);
    expect(wheel.currentMs).toBe(1_001);
    expect(wheel.nextDueMs()).toBe(4_096);
    expect(wheel.advance(4_096, 100).length).toBe(0);
    expect(wheel.nextDueMs()).toBe(5_000);
    expect(wheel.advance(4_999, 100).length).toBe(0);
    expect(wheel.advance(5_000, 100).toArray()).toEqual([{ id: 'b', dueMs: 5_000 }]);
    expect(wheel.nextDueMs()).toBe(3_145_728);
    expect(drain(wheel, 3_599_999)).toEqual([]);
    expect(wheel.nextDueMs()).toBe(3_600_000);
    expect(wheel.advance(3_600_000, 100).toArray()).toEqual([{ id: 'c', dueMs: 3_600_000 }]);
    expect(wheel.size).toBe(0);
    expect(wheel.nextDueMs()).toBeUndefined();
  });

  it('returns due entries in due order, never early, and keeps the rest', () => {
    const wheel = new TimingWheel({ startMs: T0 });
    const dues = [5, 1, 86_400_000, 3, 70_000, 3, 1_000_000, 2_000, 60_000_000];
    dues.forEach((d, i) => wheel.add(`job-${i}`, T0 + d));
    expect(wheel.size).toBe(dues.length);
    const first = drain(wheel, T0 + 70_000);
    expect(first.map((e) => e.dueMs - T0)).toEqual([1, 3, 3, 5, 2_000, 70_000]);
    expect(new Set(first.map((e) => e.id))).toEqual(
      new Set(['job-1', 'job-3', 'job-5', 'job-0', 'job-7', 'job-4']),
    );
    expect(wheel.size).toBe(3);
    expect(drain(wheel, T0 + 86_400_000).map((e) => e.dueMs - T0)).toEqual([
      1_000_000, 60_000_000, 86_400_000,
    ]);
  });

  it('returns at most maxBatch entries per call, earliest first', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    for (let i = 0; i < 25; i++) wheel.add(`j${i}`, 100 + (i % 5));
    const sizes: number[] = [];
    const dues: number[] = [];
    for (;;) {
      const batch = wheel.advance(1_000, 10);
      if (batch.length === 0) break;
      sizes.push(batch.length);
      dues.push(...batch.dueMs.subarray(0, batch.length));
    }
    expect(sizes).toEqual([10, 10, 5]);
    expect(dues).toEqual([...dues].sort((a, b) => a - b));
  });

  it('returns entries added already due on the next advance, before later ones', () => {
    const wheel = new TimingWheel({ startMs: 10_000 });
    wheel.add('later', 10_050);
    wheel.add('past-2', 9_000);
    wheel.add('past-1', 5);
    expect(wheel.nextDueMs()).toBe(5);
    expect(wheel.advance(10_000, 10).toArray()).toEqual([
      { id: 'past-1', dueMs: 5 },
      { id: 'past-2', dueMs: 9_000 },
    ]);
    wheel.add('now', 10_000);
    expect(wheel.advance(10_000, 10).toArray()).toEqual([{ id: 'now', dueMs: 10_000 }]);
    expect(wheel.advance(10_050, 10).toArray()).toEqual([{ id: 'later', dueMs: 10_050 }]);
  });

  it('returns nothing not yet due when nowMs goes backwards', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    wheel.advance(1_000, 10);
    wheel.add('x', 900);
    wheel.add('y', 2_000);
    expect(wheel.advance(500, 10).length).toBe(0);
    expect(wheel.advance(900, 10).toArray()).toEqual([{ id: 'x', dueMs: 900 }]);
    expect(wheel.advance(1_999, 10).length).toBe(0);
    expect(wheel.advance(2_000, 10).toArray()).toEqual([{ id: 'y', dueMs: 2_000 }]);
  });

  it('cancels by handle once, and rejects stale or forged handles', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    const h = wheel.add('a', 100);
    expect(wheel.cancel(h)).toBe(true);
    expect(wheel.cancel(h)).toBe(false);
    expect(wheel.has('a')).toBe(false);
    // The record is reused by the next add; the old handle must not reach the new entry.
    const h2 = wheel.add('b', 100);
    expect(h2).not.toBe(h);
    expect(wheel.cancel(h)).toBe(false);
    expect(wheel.reschedule(h, 5)).toBe(false);
    expect(wheel.has('b')).toBe(true);
    for (const forged of [0, -1, 1.5, NaN, Infinity, h2 + 0.5, 2 ** 52, h2 + 2 ** 26]) {
      expect(wheel.cancel(forged as WheelHandle)).toBe(false);
    }
    const expired = wheel.add('c', 50);
    wheel.advance(100, 10);
    expect(wheel.cancel(expired)).toBe(false);
    expect(wheel.cancel(h2)).toBe(false);
    expect(wheel.size).toBe(0);
  });

  it('cancels, reschedules and looks up by job id', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    const h = wheel.add('job-1', 1_000);
    wheel.add('job-2', 2_000);
    expect(wheel.has('job-1')).toBe(true);
    expect(wheel.dueMsOf('job-1')).toBe(1_000);
    expect(wheel.handleOf('job-1')).toBe(h);
    expect(wheel.dueMsOf('nope')).toBeUndefined();
    expect(wheel.handleOf('nope')).toBeUndefined();
    expect(wheel.rescheduleById('job-1', 3_000)).toBe(true);
    expect(wheel.dueMsOf('job-1')).toBe(3_000);
    expect(wheel.reschedule(h, 10)).toBe(true);
    expect(wheel.dueMsOf('job-1')).toBe(10);
    expect(wheel.rescheduleById('nope', 5)).toBe(false);
    expect(wheel.cancelById('job-2')).toBe(true);
    expect(wheel.cancelById('job-2')).toBe(false);
    expect(drain(wheel, 10_000)).toEqual([{ id: 'job-1', dueMs: 10 }]);
  });

  it('cancels by id lazily up to a bound, then at once, and frees what it left behind', () => {
    const wheel = new TimingWheel({ startMs: 0, initialCapacity: 0 });
    const n = 6_000;
    const handles = Array.from({ length: n }, (_, i) => wheel.add(`job-${i}`, 10 + (i % 3_000) * 997));
    const past = wheel.add('overdue', 0);
    expect(wheel.advance(5, 10).ids).toEqual(['overdue']); // the cursor passes 5: add two overdue ones
    expect(wheel.cancel(past)).toBe(false);
    wheel.add('late-1', 1);
    wheel.add('late-2', 2);
    expect(wheel.cancelById('late-1')).toBe(true);
    expect(wheel.stats().overdue).toBe(1);
    // More cancels than the lazy bound (live / 4 + 1,024): the later ones unlink at once.
    for (let i = 0; i < n; i += 2) expect(wheel.cancelById(`job-${i}`)).toBe(true);
    expect(wheel.size).toBe(n / 2 + 1);
    for (let i = 0; i < n; i += 2) {
      expect(wheel.has(`job-${i}`)).toBe(false);
      expect(wheel.cancel(handles[i]!)).toBe(false);
      expect(wheel.reschedule(handles[i]!, 50)).toBe(false);
      expect(wheel.cancelById(`job-${i}`)).toBe(false);
    }
    // An id cancelled lazily can be added again at once, and the old handle stays stale.
    const again = wheel.add('job-0', 20);
    expect(again).not.toBe(handles[0]);
    expect(wheel.cancel(handles[0]!)).toBe(false);
    const out = drain(wheel, 10 + 3_000 * 997);
    expect(out.map((e) => e.id).sort()).toEqual(
      ['late-2', 'job-0', ...Array.from({ length: n / 2 }, (_, k) => `job-${2 * k + 1}`)].sort(),
    );
    expect(out.map((e) => e.dueMs)).toEqual(out.map((e) => e.dueMs).sort((a, b) => a - b));
    expect(wheel.size).toBe(0);
    expect(wheel.nextDueMs()).toBeUndefined();
    // Everything left behind was freed: the records are reused before the pool grows.
    const capacity = wheel.stats().capacity;
    for (let i = 0; i < n; i++) wheel.add(`again-${i}`, 10_000_000 + i);
    expect(wheel.stats().capacity).toBe(capacity);
  });

  it('cancels many by id, as cancelById on each in turn', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    const ids = Array.from({ length: 300 }, (_, i) => {
      if (i % 50 === 7) return `tenant-${i}/a-job-id-longer-than-forty-bytes-${'x'.repeat(i % 9)}`;
      if (i % 50 === 9) return `ジョブ-${i}`;
      return `3f2a9c1e-8b7d-4e6f-a5c4-${String(i).padStart(12, '0')}`;
    });
    ids.forEach((id, i) => wheel.add(id, 1_000 + i * 997));
    // Every other id, some twice, and ids never added, across several groups of 128.
    const victims = ids.filter((_, i) => i % 2 === 0);
    const asked = [...victims, victims[3]!, 'never-added', victims[0]!, 'x'.repeat(60)];
    expect(wheel.cancelManyById(asked)).toBe(victims.length);
    expect(wheel.size).toBe(150);
    for (const [i, id] of ids.entries()) expect(wheel.has(id)).toBe(i % 2 === 1);
    expect(wheel.cancelManyById([])).toBe(0);
    // An invalid id throws, after cancelling the ones before it (and none after it).
    expect(codeOf(() => wheel.cancelManyById([ids[1]!, '', ids[3]!]))).toBe(WheelErrorCode.InvalidId);
    expect(wheel.has(ids[1]!)).toBe(false);
    expect(wheel.has(ids[3]!)).toBe(true);
    const out = drain(wheel, 10_000_000, 64);
    expect(out.map((e) => e.id)).toEqual(ids.filter((_, i) => i % 2 === 1 && i !== 1));
  });

  it('reschedules entries between the overdue heap and the levels', () => {
    const wheel = new TimingWheel({ startMs: 1_000 });
    const a = wheel.add('a', 10);
    const b = wheel.add('b', 20);
    wheel.add('c', 30);
    expect(wheel.reschedule(a, 5_000_000)).toBe(true);
    expect(wheel.reschedule(b, 25)).toBe(true);
    expect(wheel.cancelById('c')).toBe(true);
    expect(wheel.stats().overdue).toBe(1);
    expect(drain(wheel, 1_000)).toEqual([{ id: 'b', dueMs: 25 }]);
    expect(drain(wheel, 5_000_000)).toEqual([{ id: 'a', dueMs: 5_000_000 }]);
  });

  it('stores and returns ids of any length and script', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    const ids = [
      'x',
      '3f2a9c1e-8b7d-4e6f-a5c4-000000000001',
      'forty-bytes-exactly-0123456789abcdefghij',
      'forty-one-bytes-0123456789abcdefghijklmno',
      'ünïcödé-ジョブ-😀',
      'ジ'.repeat(14),
      'long/'.repeat(500),
      'z'.repeat(65_535),
    ];
    ids.forEach((id, i) => wheel.add(id, 100 + i));
    for (const id of ids) expect(wheel.has(id)).toBe(true);
    expect(wheel.has('forty-bytes-exactly-0123456789abcdefghiJ')).toBe(false);
    expect(wheel.has('ünïcödé-ジョブ-😁')).toBe(false);
    expect(drain(wheel, 1_000).map((e) => e.id)).toEqual(ids);
  });

  it('reuses and compacts the storage of long ids', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 200; i++)
        wheel.add(`${'p'.repeat(41 + ((round * 7 + i) % 60))}-${round}-${i}`, 10 + i);
      for (let i = 0; i < 200; i += 2)
        expect(wheel.cancelById(`${'p'.repeat(41 + ((round * 7 + i) % 60))}-${round}-${i}`)).toBe(true);
      const out = drain(wheel, 1_000);
      expect(out).toHaveLength(100);
      expect(out.every((e) => e.id.endsWith(`-${round}-${Number(e.id.split('-').pop())}`))).toBe(true);
      wheel.advance(0, 1);
    }
    expect(wheel.size).toBe(0);
  });

  it('holds due times up to 2^53 - 1, creating levels as needed', () => {
    const wheel = new TimingWheel({ startMs: 0, wheelBits: 5 });
    wheel.add('far', Number.MAX_SAFE_INTEGER);
    wheel.add('near', 3);
    expect(wheel.stats().levels).toBeGreaterThan(10);
    expect(drain(wheel, 3)).toEqual([{ id: 'near', dueMs: 3 }]);
    expect(drain(wheel, Number.MAX_SAFE_INTEGER - 1)).toEqual([]);
    expect(drain(wheel, Number.MAX_SAFE_INTEGER)).toEqual([{ id: 'far', dueMs: Number.MAX_SAFE_INTEGER }]);
  });

  it('bounds the work of one advance call by its cascade budget', () => {
    const wheel = new TimingWheel({ startMs: 0, cascadeBudget: 10 });
    for (let i = 0; i < 1_000; i++) wheel.add(`j${i}`, 3_600_000 + (i % 100));
    // Everything sits in one level-2 bucket: splitting it takes 100 calls of 10 moves per level.
    const first = wheel.advance(4_000_000, 50);
    expect(first.length).toBe(0);
    expect(wheel.nextDueMs()).toBeLessThanOrEqual(4_000_000);
    let calls = 1;
    const out: number[] = [];
    while (wheel.size > 0) {
      const batch = wheel.advance(4_000_000, 50);
      out.push(...batch.dueMs.subarray(0, batch.length));
      calls++;
    }
    expect(out).toHaveLength(1_000);
    expect(out).toEqual([...out].sort((a, b) => a - b));
    expect(calls).toBeGreaterThan(100);
    expect(calls).toBeLessThan(400);
  });

  it('keeps nextDueMs at or before the next due time', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    expect(wheel.nextDueMs()).toBeUndefined();
    wheel.add('a', 600);
    expect(wheel.nextDueMs()).toBe(600);
    wheel.add('b', 90_000);
    expect(wheel.nextDueMs()).toBe(600);
    wheel.cancelById('a');
    // A cancelled entry may leave its bucket lazily: nextDueMs stays a lower bound meanwhile.
    for (let calls = 0; wheel.nextDueMs()! < 90_000; calls++) {
      expect(calls).toBeLessThan(3);
      expect(drain(wheel, wheel.nextDueMs()!).length).toBe(0);
    }
    expect(wheel.nextDueMs()).toBe(90_000);
  });

  it('loads in bulk, all or nothing', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    wheel.add('existing', 5);
    const entries = Array.from({ length: 5_000 }, (_, i) => ({
      id: `job-${i}`,
      dueMs: 10 + ((i * 7919) % 100_000),
    }));
    expect(codeOf(() => wheel.load([...entries, { id: 'existing', dueMs: 1 }]))).toBe(
      WheelErrorCode.DuplicateId,
    );
    expect(codeOf(() => wheel.load([...entries, { id: 'job-3', dueMs: 1 }]))).toBe(
      WheelErrorCode.DuplicateId,
    );
    expect(codeOf(() => wheel.load([...entries, { id: 'bad', dueMs: 1.5 }]))).toBe(WheelErrorCode.InvalidDue);
    expect(codeOf(() => wheel.load([...entries, { id: '', dueMs: 1 }]))).toBe(WheelErrorCode.InvalidId);
    expect(wheel.size).toBe(1);
    expect(wheel.has('job-0')).toBe(false);
    wheel.load(entries);
    expect(wheel.size).toBe(5_001);
    const out = drain(wheel, 200_000, 10_000);
    expect(out.map((e) => e.dueMs)).toEqual([5, ...entries.map((e) => e.dueMs).sort((a, b) => a - b)]);
  });

  it("hands each entry's tag back with it, through reschedules, reuse, growth and load", () => {
    const wheel = new TimingWheel({ startMs: 0 });
    wheel.add('a', 10, 7);
    wheel.add('b', 20);
    wheel.add('c', 5_000, -2_147_483_648);
    expect(wheel.tagOf('a')).toBe(7);
    expect(wheel.tagOf('b')).toBe(0);
    expect(wheel.tagOf('nope')).toBeUndefined();
    expect(wheel.rescheduleById('a', 30)).toBe(true); // keeps its tag
    expect(wheel.rescheduleById('b', 25, 2_147_483_647)).toBe(true); // takes the new one
    wheel.add('zero', 40, 0);
    expect(drain(wheel, 10_000)).toEqual([
      { id: 'b', dueMs: 25, tag: 2_147_483_647 },
      { id: 'a', dueMs: 30, tag: 7 },
      { id: 'zero', dueMs: 40 },
      { id: 'c', dueMs: 5_000, tag: -2_147_483_648 },
    ]);
    // Freed records are reused (and the pools grow past their first size): no tag is left over.
    for (let i = 0; i < 3_000; i++) wheel.add(`n-${i}`, 20_000 + i, i % 5 === 0 ? i : 0);
    wheel.load(Array.from({ length: 3_000 }, (_, i) => ({ id: `l-${i}`, dueMs: 30_000 + i, tag: -i })));
    wheel.load([{ id: 'untagged', dueMs: 40_000 }]);
    const out = drain(wheel, 50_000);
    expect(out).toHaveLength(6_001);
    for (const e of out) {
      const [kind, n] = e.id.split('-');
      const want = kind === 'n' ? (Number(n) % 5 === 0 ? Number(n) : 0) : kind === 'l' ? 0 - Number(n) : 0;
      expect(e.tag ?? 0).toBe(want || 0);
    }
  });

  it('rejects invalid arguments with stable, non-retriable codes', () => {
    const wheel = new TimingWheel({ startMs: 0 });
    for (const due of [NaN, 1.5, -1, 2 ** 53, Infinity, '5' as unknown as number]) {
      expect(codeOf(() => wheel.add('a', due))).toBe(WheelErrorCode.InvalidDue);
      expect(codeOf(() => wheel.rescheduleById('a', due))).toBe(WheelErrorCode.InvalidDue);
      expect(codeOf(() => wheel.reschedule(12345 as WheelHandle, due))).toBe(WheelErrorCode.InvalidDue);
    }
    for (const id of [
      '',
      42 as unknown as string,
      undefined as unknown as string,
      'a\ud800b',
      '\udc00',
      'é'.repeat(40_000),
    ]) {
      expect(codeOf(() => wheel.add(id, 1))).toBe(WheelErrorCode.InvalidId);
      expect(codeOf(() => wheel.has(id))).toBe(WheelErrorCode.InvalidId);
    }
    for (const tag of [1.5, 2 ** 31, -(2 ** 31) - 1, NaN, '3' as unknown as number]) {
      expect(codeOf(() => wheel.add('t', 1, tag))).toBe(WheelErrorCode.InvalidTag);
      expect(codeOf(() => wheel.load([{ id: 't', dueMs: 1, tag }]))).toBe(WheelErrorCode.InvalidTag);
      expect(codeOf(() => wheel.rescheduleById('t', 1, tag))).toBe(WheelErrorCode.InvalidTag);
    }
    expect(wheel.size).toBe(0);
    wheel.add('dup', 1);
    expect(codeOf(() => wheel.add('dup', 2))).toBe(WheelErrorCode.DuplicateId);
    expect(wheel.dueMsOf('dup')).toBe(1);
    for (const now of [NaN, -1, 0.5, 2 ** 53]) {
      expect(codeOf(() => wheel.advance(now, 10))).toBe(WheelErrorCode.InvalidNow);
    }
    for (const max of [0, -1, 1.5, NaN, 2 ** 24 + 1]) {
      expect(codeOf(() => wheel.advance(10, max))).toBe(WheelErrorCode.InvalidBatch);
    }
    expect(wheel.size).toBe(1);
  });

  it('validates its options', () => {
    expect(codeOf(() => new TimingWheel({} as { startMs: number }))).toBe(WheelErrorCode.InvalidOption);
    expect(codeOf(() => new TimingWheel({ startMs: -1 }))).toBe(WheelErrorCode.InvalidOption);
    expect(codeOf(() => new TimingWheel({ startMs: 0, wheelBits: 4 }))).toBe(WheelErrorCode.InvalidOption);
    expect(codeOf(() => new TimingWheel({ startMs: 0, wheelBits: 17 }))).toBe(WheelErrorCode.InvalidOption);
    expect(codeOf(() => new TimingWheel({ startMs: 0, cascadeBudget: 0 }))).toBe(
      WheelErrorCode.InvalidOption,
    );
    expect(codeOf(() => new TimingWheel({ startMs: 0, initialCapacity: -5 }))).toBe(
      WheelErrorCode.InvalidOption,
    );
    const wheel = new TimingWheel({ startMs: 7, cascadeBudget: Infinity });
    expect(wheel.options).toEqual({
      startMs: 7,
      wheelBits: 10,
      cascadeBudget: Infinity,
      initialCapacity: 1_024,
    });
    expect(Object.isFrozen(wheel.options)).toBe(true);
    expect(wheel.currentMs).toBe(7);
  });

  it('grows from empty and accounts its memory', () => {
    const wheel = new TimingWheel({ startMs: 0, initialCapacity: 0 });
    for (let i = 0; i < 50_000; i++) wheel.add(`job-${i}`, 1 + ((i * 7_919) % 86_400_000));
    const stats = wheel.stats();
    expect(stats.size).toBe(50_000);
    expect(stats.capacity).toBeGreaterThanOrEqual(50_000);
    expect(stats.wheelBytes / 50_000).toBeLessThan(64);
    expect(stats.idIndexBytes / 50_000).toBeLessThan(200);
    for (let i = 0; i < 50_000; i += 3) expect(wheel.cancelById(`job-${i}`)).toBe(true);
    const out = drain(wheel, 86_400_000, 10_000);
    expect(out).toHaveLength(50_000 - 16_667);
    expect(wheel.stats().size).toBe(0);
  });
});
