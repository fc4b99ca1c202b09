import { describe, expect, it } from 'vitest';
import { admissionStep } from './admission.js';

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
