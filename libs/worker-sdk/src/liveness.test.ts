import { afterEach, describe, expect, it, vi } from 'vitest';
import type pg from 'pg';
import { createLogger } from '@sched/logging';
import { WorkerLiveness } from './liveness.js';

/** A pool whose beats succeed while `up` is true; each beat answers as worker_beat does. */
function scriptedPool() {
  const state = { up: true, beats: 0, holder: '' };
  const pool = {
    query: vi.fn(async (q: { name?: string; values?: unknown[] } | string) => {
      if (typeof q === 'string' || !q.name?.startsWith('worker_beat')) return Promise.resolve({ rows: [] });
      state.beats++;
      if (!state.up) return Promise.reject(new Error('connection refused'));
      const [, incarnation] = q.values as [string, string];
      const mine = state.holder === '' || state.holder === incarnation || q.name === 'worker_beat_take_over';
      if (mine) state.holder = incarnation;
      return Promise.resolve({
        rows: [
          {
            alive_until_ms: mine ? Date.now() + 1_000 : null,
            old_incarnation: mine ? null : state.holder,
            old_until_ms: null,
          },
        ],
      });
    }),
  };
  return { pool: pool as unknown as pg.Pool, state };
}

/** A liveness of worker `w` over `pool`, TTL 1 s beaten every 200 ms unless told otherwise. */
const liveness = (pool: pg.Pool, onLapsed: () => void, ttlMs = 1_000, everyMs = 200) =>
  new WorkerLiveness({
    pool,
    log: createLogger('test', { level: 'silent' }),
    workerId: 'w',
    ttlMs,
    everyMs,
    onLapsed,
  });

/** Fake timers, a scripted pool and a started liveness of worker `w`. */
async function started() {
  vi.useFakeTimers();
  const { pool, state } = scriptedPool();
  const onLapsed = vi.fn();
  const live = liveness(pool, onLapsed);
  await live.start();
  return { state, onLapsed, live };
}

describe('WorkerLiveness', () => {
  afterEach(() => vi.useRealTimers());

  it('tells the worker once when no beat succeeded for the whole TTL, and again only after a good beat', async () => {
    const { state, onLapsed, live } = await started();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(onLapsed).not.toHaveBeenCalled();
    state.up = false;
    await vi.advanceTimersByTimeAsync(1_400);
    expect(onLapsed).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(onLapsed).toHaveBeenCalledTimes(1);
    state.up = true;
    await vi.advanceTimersByTimeAsync(400);
    state.up = false;
    await vi.advanceTimersByTimeAsync(1_400);
    expect(onLapsed).toHaveBeenCalledTimes(2);
    await live.stop();
  });

  it('counts as lapsed when another process holds the row, and never takes it back after its first beat', async () => {
    const { state, onLapsed, live } = await started();
    state.holder = 'another-process';
    await vi.advanceTimersByTimeAsync(1_400);
    expect(onLapsed).toHaveBeenCalledTimes(1);
    expect(state.holder).toBe('another-process');
    await live.stop();
  });

  it('refuses to start on a schema without migration 013, saying what to do', async () => {
    const pool = {
      query: vi.fn(async () =>
        Promise.reject(Object.assign(new Error('relation does not exist'), { code: '42P01' })),
      ),
    } as unknown as pg.Pool;
    await expect(liveness(pool, () => undefined).start()).rejects.toMatchObject({
      code: 'SCHED_E_SCHEMA_BEHIND',
      message: expect.stringMatching(/migration 013.*SCHED_WORKER_LIVENESS_TTL_MS=0/),
    });
  });

  it('does nothing with a TTL of 0', async () => {
    const { pool, state } = scriptedPool();
    const live = liveness(pool, () => undefined, 0, 0);
    await live.start();
    await live.stop();
    expect(state.beats).toBe(0);
  });
});
