import { describe, expect, it } from 'vitest';
import { StartHub, type StartLog } from '../start-log.js';
import type { SystemFactory } from '../systems/system.js';
import { warmUp } from './warm-up.js';

/** A stand-in system for the warm-up's bookkeeping (a unit test; the bench runs the real ones). */
function fakeSystem(startFraction: number) {
  const seen = { opened: 0, closed: 0, created: 0 };
  const f = {
    open: async () => {
      seen.opened++;
      return {
        createBatched: async (log: StartLog, from: number, to: number) => {
          seen.created += to - from;
          const starting = Math.floor((to - from) * startFraction);
          for (let i = from; i < from + starting; i++) log.record(i, Date.now() + 60_000, -1);
        },
        close: async () => {
          seen.closed++;
        },
      };
    },
  } as unknown as SystemFactory;
  return { f, seen };
}

describe('e2e warm-up', () => {
  it('runs every job through a throwaway session and closes it', async () => {
    const { f, seen } = fakeSystem(1);
    const line = await warmUp(f, new StartHub(), { jobs: 500, spanMs: 100, leadMs: 0, capMs: 1_000 });
    expect(line).toMatch(/^warm-up: 500 of 500 jobs started in [\d.]+ s \(unmeasured\)$/);
    expect(seen).toEqual({ opened: 1, closed: 1, created: 500 });
  });

  it('gives up at its cap and says how many started', async () => {
    const { f, seen } = fakeSystem(0.5);
    const line = await warmUp(f, new StartHub(), { jobs: 100, spanMs: 10, leadMs: 0, capMs: 50 });
    expect(line).toMatch(/^warm-up: 50 of 100 jobs started/);
    expect(seen.closed).toBe(1);
  });

  it('does nothing when the plan asks for no jobs', async () => {
    const { f, seen } = fakeSystem(1);
    expect(await warmUp(f, new StartHub(), { jobs: 0, spanMs: 0, leadMs: 0, capMs: 0 })).toBe(
      'warm-up: none',
    );
    expect(seen.opened).toBe(0);
  });
});
