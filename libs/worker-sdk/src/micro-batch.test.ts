import { afterEach, describe, expect, it, vi } from 'vitest';
import { MicroBatcher, retryOnDeadlock } from './micro-batch.js';

describe('MicroBatcher linger', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function recorder(maxBatch: number, lingerMs: number) {
    const calls: number[][] = [];
    const b = new MicroBatcher<number, number>(
      async (xs) => {
        calls.push(xs);
        return xs;
      },
      maxBatch,
      2,
      lingerMs,
    );
    return { b, calls };
  }

  it('holds a lone item for lingerMs so later ones share its flush', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
    const { b, calls } = recorder(100, 10);
    const first = b.submit(1);
    await vi.advanceTimersByTimeAsync(6);
    expect(calls).toEqual([]);
    const second = b.submit(2);
    await vi.advanceTimersByTimeAsync(5);
    expect(calls).toEqual([[1, 2]]);
    expect(await Promise.all([first, second])).toEqual([1, 2]);
  });

  it('sends a full batch at once, without waiting', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
    const { b, calls } = recorder(3, 1_000);
    const all = Promise.all([1, 2, 3, 4].map((x) => b.submit(x)));
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toEqual([[1, 2, 3]]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls).toEqual([[1, 2, 3], [4]]);
    expect(await all).toEqual([1, 2, 3, 4]);
  });
});

describe('MicroBatcher', () => {
  it('coalesces submissions of one turn into one flush, each caller getting its own result', async () => {
    const calls: number[][] = [];
    const b = new MicroBatcher<number, number>(
      async (xs) => {
        calls.push(xs);
        return xs.map((x) => x * 10);
      },
      100,
      1,
    );
    const out = await Promise.all([1, 2, 3].map((x) => b.submit(x)));
    expect(out).toEqual([10, 20, 30]);
    expect(calls).toEqual([[1, 2, 3]]);
  });

  it('respects maxBatch and maxInFlight, and batches what arrives while a flush is in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const sizes: number[] = [];
    const b = new MicroBatcher<number, number>(
      async (xs) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        sizes.push(xs.length);
        await new Promise((r) => setTimeout(r, 5));
        inFlight--;
        return xs;
      },
      4,
      2,
    );
    const all = await Promise.all(Array.from({ length: 20 }, (_, i) => b.submit(i)));
    expect(all).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(peak).toBeLessThanOrEqual(2);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(4);
    expect(sizes.reduce((a, x) => a + x, 0)).toBe(20);
  });

  it('rejects every item of a failed flush and keeps serving later ones', async () => {
    let fail = true;
    const b = new MicroBatcher<number, number>(
      async (xs) => {
        if (fail) throw new Error('db down');
        return xs;
      },
      10,
      1,
    );
    const r = await Promise.allSettled([b.submit(1), b.submit(2)]);
    expect(r.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(b.submit(3)).resolves.toBe(3);
  });

  it('rejects when a flush returns the wrong number of results (nothing silently dropped)', async () => {
    const b = new MicroBatcher<number, number>(async () => [1], 10, 1);
    const r = await Promise.allSettled([b.submit(1), b.submit(2)]);
    expect(r.every((x) => x.status === 'rejected')).toBe(true);
  });
});

describe('retryOnDeadlock', () => {
  it('retries a deadlock victim and gives up on other errors at once', async () => {
    let n = 0;
    await expect(
      retryOnDeadlock(async () => {
        if (++n < 3) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
        return 'ok';
      }),
    ).resolves.toBe('ok');
    expect(n).toBe(3);
    let m = 0;
    await expect(
      retryOnDeadlock(async () => {
        m++;
        throw Object.assign(new Error('boom'), { code: '23505' });
      }),
    ).rejects.toThrow('boom');
    expect(m).toBe(1);
  });
});
