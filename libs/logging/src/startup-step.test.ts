import { afterEach, describe, expect, it, vi } from 'vitest';
import { startupStep } from './index.js';

describe('startupStep', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('warns while a step is pending, names the step, and stops once it settles', async () => {
    vi.useFakeTimers();
    const warn = vi.fn();
    let finish!: (v: number) => void;
    const p = startupStep(
      { warn },
      'kafka group join',
      () => new Promise<number>((r) => (finish = r)),
      1_000,
    );
    await vi.advanceTimersByTimeAsync(2_500);
    expect(warn).toHaveBeenCalledTimes(2);
    expect(warn.mock.calls[1]![0]).toMatchObject({ step: 'kafka group join', waitedMs: 2_000 });
    finish(7);
    await expect(p).resolves.toBe(7);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(warn).toHaveBeenCalledTimes(2);
  });

  it('passes a failure through and stops warning', async () => {
    vi.useFakeTimers();
    const warn = vi.fn();
    await expect(
      startupStep({ warn }, 'migrate', () => Promise.reject(new Error('boom')), 1_000),
    ).rejects.toThrow('boom');
    await vi.advanceTimersByTimeAsync(3_000);
    expect(warn).not.toHaveBeenCalled();
  });
});
