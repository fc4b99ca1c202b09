import { describe, expect, it } from 'vitest';
import type { GoneWorker } from '@sched/store';
import { GoneWorkers } from './gone-workers.js';

const gone = (workerId: string, over: Partial<GoneWorker> = {}): GoneWorker => ({
  workerId,
  incarnation: `${workerId}-1`,
  startedAtMs: 1_000,
  aliveUntilMs: 5_000,
  dead: true,
  ...over,
});

describe('GoneWorkers', () => {
  it('asks for each gone process once per partition and epoch, and again for a new case', () => {
    const g = new GoneWorkers();
    g.update([gone('a'), gone('b')]);
    expect(g.count).toBe(2);
    expect(g.toSweep(0, 1)).toEqual(['a', 'b']);
    g.sweptAll(0, 1, ['a', 'b']);
    expect(g.toSweep(0, 1)).toEqual([]);
    // Another partition, or the same one under a new epoch (a new owner's look), still looks.
    expect(g.toSweep(1, 1)).toEqual(['a', 'b']);
    expect(g.toSweep(0, 2)).toEqual(['a', 'b']);
    // `a` came back and went again (a later aliveUntil), `b` was replaced by a new process: new cases.
    g.update([gone('a', { aliveUntilMs: 9_000 }), gone('b', { incarnation: 'b-2', dead: false })]);
    expect(g.toSweep(0, 1)).toEqual(['a', 'b']);
    g.sweptAll(0, 1, ['a']);
    expect(g.toSweep(0, 1)).toEqual(['b']);
  });

  it('forgets cases no longer listed', () => {
    const g = new GoneWorkers();
    g.update([gone('a')]);
    g.sweptAll(0, 1, ['a']);
    g.update([]);
    expect(g.count).toBe(0);
    expect(g.toSweep(0, 1)).toEqual([]);
    // Listed again with the same case: it was forgotten, so it is looked for again.
    g.update([gone('a')]);
    expect(g.toSweep(0, 1)).toEqual(['a']);
  });
});
