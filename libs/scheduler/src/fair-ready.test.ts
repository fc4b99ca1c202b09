import { describe, expect, it } from 'vitest';
import { FairReady, FireTags } from './fair-ready.js';
import { PartitionRuntime } from './partition-runtime.js';
import { wheelIndexFactory } from './wheel-index.js';

const entry = (jobId: string, dueMs: number, tag: number) => ({ jobId, dueMs, tag });

describe('FireTags', () => {
  it('gives each tenant its own number and keeps it', () => {
    const tags = new FireTags();
    const a = tags.tag('a', 0);
    const b = tags.tag('b', 0);
    expect(a).not.toBe(b);
    expect(tags.tag('a', 0)).toBe(a);
    // Same tenant, other classes: same tenant bits, other class bits.
    expect(tags.tag('a', 5) >> 2).toBe(a >> 2);
    expect(tags.tag('a', 5)).not.toBe(a);
    expect(tags.tag('a', -3)).not.toBe(tags.tag('a', 5));
  });
});

describe('FairReady', () => {
  it('serves high before normal before low, whatever the due order', () => {
    const tags = new FireTags();
    const r = new FairReady();
    r.push(entry('low', 1, tags.tag('t', -1)));
    r.push(entry('normal', 2, tags.tag('t', 0)));
    r.push(entry('high', 3, tags.tag('t', 1)));
    r.push(entry('schedule', 4, FireTags.FIRST));
    expect(r.take(10).map((e) => e.jobId)).toEqual(['high', 'schedule', 'normal', 'low']);
    expect(r.size).toBe(0);
  });

  it('gives every tenant an equal share of a take, each in its own due order', () => {
    const tags = new FireTags();
    const r = new FairReady();
    for (let i = 0; i < 1000; i++) r.push(entry(`big-${i}`, i, tags.tag('big', 0)));
    for (let i = 0; i < 3; i++) r.push(entry(`small-${i}`, 2000 + i, tags.tag('small', 0)));
    const first = r.take(10);
    // The small tenant's three come in the first take despite being due after all 1000.
    expect(first.filter((e) => e.jobId.startsWith('small')).map((e) => e.jobId)).toEqual([
      'small-0',
      'small-1',
      'small-2',
    ]);
    // What the small tenant left goes to the big one: the take is full.
    expect(first).toHaveLength(10);
    expect(first.filter((e) => e.jobId.startsWith('big')).map((e) => e.dueMs)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(r.size).toBe(993);
    expect(r.oldestDueMs()).toBe(7);
    const rest = r.take(5000);
    expect(rest).toHaveLength(993);
    expect(rest.map((e) => e.dueMs)).toEqual(Array.from({ length: 993 }, (_, i) => i + 7));
    expect(r.oldestDueMs()).toBe(Infinity);
  });

  it('rotates which tenant goes first so a take of 1 does not always favour the same one', () => {
    const tags = new FireTags();
    const r = new FairReady();
    for (let i = 0; i < 4; i++) {
      r.push(entry(`a-${i}`, i, tags.tag('a', 0)));
      r.push(entry(`b-${i}`, i, tags.tag('b', 0)));
    }
    const order = Array.from({ length: 8 }, () => r.take(1)[0]!.jobId);
    expect(order).toEqual(['a-0', 'b-0', 'a-1', 'b-1', 'a-2', 'b-2', 'a-3', 'b-3']);
  });

  it('keeps its FIFO right across compaction of a long queue', () => {
    const r = new FairReady();
    for (let i = 0; i < 5000; i++) r.push(entry(`j-${i}`, i, 0));
    const seen: number[] = [];
    while (r.size > 0) {
      for (const e of r.take(700)) seen.push(e.dueMs);
      if (r.size > 0) expect(r.oldestDueMs()).toBe(seen.length);
    }
    expect(seen).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });

  it('splits a round over the classes by weight, so a sustained high backlog does not starve the others', () => {
    const tags = new FireTags();
    const r = new FairReady([7, 2, 1]);
    const cls = ['high', 'normal', 'low'] as const;
    const prio = { high: 1, normal: 0, low: -1 };
    for (const c of cls) for (let i = 0; i < 1000; i++) r.push(entry(`${c}-${i}`, i, tags.tag('t', prio[c])));
    const counts = (es: { jobId: string }[]) =>
      cls.map((c) => es.filter((e) => e.jobId.startsWith(`${c}-`)).length);
    expect(counts(r.take(100))).toEqual([70, 20, 10]);
    expect(counts(r.take(10))).toEqual([7, 2, 1]);
    // Each class in its own due order across takes.
    const next = r.take(10).filter((e) => e.jobId.startsWith('low-'));
    expect(next.map((e) => e.dueMs)).toEqual([11]);
  });

  it('gives a class what the others cannot use, and no credit for the time it had nothing waiting', () => {
    const tags = new FireTags();
    const r = new FairReady([7, 2, 1]);
    for (let i = 0; i < 50; i++) r.push(entry(`low-${i}`, i, tags.tag('t', -1)));
    // Alone, the low class takes the whole round.
    expect(r.take(30)).toHaveLength(30);
    for (let i = 0; i < 1000; i++) r.push(entry(`high-${i}`, i, tags.tag('t', 1)));
    // Low was served a lot while alone; high arriving now is not held back for it, nor does low
    // lose its share: 7 : 1 of the next round.
    const round = r.take(50);
    const low = round.filter((e) => e.jobId.startsWith('low-')).length;
    expect(low).toBeGreaterThanOrEqual(5);
    expect(low).toBeLessThanOrEqual(7);
    expect(round).toHaveLength(50);
  });

  it('drops a discarded entry at once from size and never offers it to a take', () => {
    const tags = new FireTags();
    const r = new FairReady();
    for (let i = 0; i < 6; i++) r.push(entry(`a-${i}`, i, tags.tag('a', 0)));
    r.push(entry('h', 10, tags.tag('a', 1)));
    expect(r.discard('a-0')?.dueMs).toBe(0);
    expect(r.discard('a-0')).toBeUndefined();
    expect(r.discard('h')?.tag).toBe(tags.tag('a', 1));
    expect(r.discard('nope')).toBeUndefined();
    expect(r.size).toBe(5);
    const got = r.take(10).map((e) => e.jobId);
    expect(got).toEqual(['a-1', 'a-2', 'a-3', 'a-4', 'a-5']);
    expect(r.size).toBe(0);
    expect(r.oldestDueMs()).toBe(Infinity);
  });

  it('gives the oldest live due time, not that of a discarded entry (the partition is not behind for it)', () => {
    const tags = new FireTags();
    const r = new FairReady();
    for (let i = 0; i < 5; i++) r.push(entry(`a-${i}`, 100 + i, tags.tag('a', 0)));
    r.push(entry('b-0', 200, tags.tag('b', 0)));
    r.discard('a-0');
    r.discard('a-1');
    expect(r.oldestDueMs()).toBe(102);
    for (let i = 2; i < 5; i++) r.discard(`a-${i}`);
    expect(r.oldestDueMs()).toBe(200);
    // The dropped ones are gone for good: a take gets the one live entry.
    expect(r.take(10).map((e) => e.jobId)).toEqual(['b-0']);
    expect(r.oldestDueMs()).toBe(Infinity);
    const rt = new PartitionRuntime(0, 1, -1, wheelIndexFactory()());
    rt.ready.push(entry('c-0', 50, tags.tag('a', 0)));
    rt.ready.push(entry('c-1', 5_000, tags.tag('a', 0)));
    rt.forget('c-0');
    expect(rt.nextDueMs()).toBe(5_000);
  });

  it('counts the same job pushed twice once, at its later entry', () => {
    const tags = new FireTags();
    const r = new FairReady();
    r.push(entry('x', 1, tags.tag('a', 0)));
    r.push(entry('y', 2, tags.tag('a', 0)));
    r.push(entry('x', 3, tags.tag('a', 1)));
    expect(r.size).toBe(2);
    expect(r.take(10)).toEqual([entry('x', 3, tags.tag('a', 1)), entry('y', 2, tags.tag('a', 0))]);
  });

  it('keeps a take full and the memory bounded when many entries are discarded', () => {
    const tags = new FireTags();
    const r = new FairReady();
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 1000; i++) r.push(entry(`r${round}-${i}`, i, tags.tag(`t${i % 7}`, (i % 3) - 1)));
      // Discard all but every tenth.
      for (let i = 0; i < 1000; i++) if (i % 10 !== 0) r.discard(`r${round}-${i}`);
    }
    expect(r.size).toBe(2000);
    // Compaction ran: the queues hold about what is live, not the 18,000 discarded.
    const queued = (r as unknown as { classes: Map<number, { length: number }>[] }).classes
      .flatMap((m) => [...m.values()])
      .reduce((n, q) => n + q.length, 0);
    expect(queued).toBeLessThan(2000 + 2 * 1025);
    const out = r.take(5000);
    expect(out).toHaveLength(2000);
    expect(out.every((e) => Number(e.jobId.split('-')[1]) % 10 === 0)).toBe(true);
    expect(new Set(out.map((e) => e.jobId)).size).toBe(2000);
  });

  it('a partition forgets or moves a job wherever its entry waits: wheel or ready set', () => {
    const rt = new PartitionRuntime(0, 1, -1, wheelIndexFactory()());
    const now = Date.now();
    rt.place('cancelled', now - 5, 4);
    rt.place('moved', now - 4, 9);
    rt.place('stays', now - 3, 4);
    rt.place('in-wheel', now + 60_000, 4);
    for (const e of rt.index.advance(now, 10)) rt.ready.push(e);
    expect(rt.ready.size).toBe(3);
    rt.forget('cancelled');
    rt.place('moved', now + 30_000);
    rt.forget('in-wheel');
    expect(rt.ready.size).toBe(1);
    expect(rt.index.size).toBe(1);
    expect(rt.ready.take(10).map((e) => e.jobId)).toEqual(['stays']);
    // A job in both (put back into the wheel while a twin waited in the ready set) leaves both.
    rt.place('twin', now - 2, 4);
    for (const e of rt.index.advance(now, 10)) rt.ready.push(e);
    rt.index.upsert('twin', now - 2, 4);
    rt.forget('twin');
    expect(rt.ready.size).toBe(0);
    expect(rt.index.size).toBe(1);
    // The moved job kept its tag on its way back to the wheel.
    expect(rt.index.advance(now + 30_000, 10)).toEqual([{ jobId: 'moved', dueMs: now + 30_000, tag: 9 }]);
  });

  it('refuses weights outside 1..1000', () => {
    expect(() => new FairReady([0, 1, 1])).toThrow(RangeError);
    expect(() => new FairReady([1, 1, 1001])).toThrow(RangeError);
  });
});
