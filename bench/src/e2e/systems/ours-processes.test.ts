import { describe, expect, it } from 'vitest';
import { holdWorkerMs, overrides } from './ours-processes.js';

describe('e2e development overrides for ours', () => {
  it('holds the worker for the milliseconds given, and not at all when unset', () => {
    expect(holdWorkerMs(undefined)).toBe(0);
    expect(holdWorkerMs('')).toBe(0);
    expect(holdWorkerMs('0')).toBe(0);
    expect(holdWorkerMs('45000')).toBe(45_000);
  });

  it('refuses a hold that is not a whole number of milliseconds in range, naming the variable', () => {
    for (const bad of ['abc', '4.5', '-1', '600001', '45s'])
      expect(() => holdWorkerMs(bad)).toThrow(/E2E_OURS_HOLD_WORKER_MS: .* is not a whole number/);
  });

  it('reads NAME=value pairs, and refuses one without a name', () => {
    process.env.E2E_OURS_WORKER_ENV = 'SCHED_WORKER_CONCURRENCY=1, A=b=c';
    try {
      expect(overrides('E2E_OURS_WORKER_ENV')).toEqual({ SCHED_WORKER_CONCURRENCY: '1', A: 'b=c' });
      process.env.E2E_OURS_WORKER_ENV = '=1';
      expect(() => overrides('E2E_OURS_WORKER_ENV')).toThrow(/is not NAME=value/);
    } finally {
      delete process.env.E2E_OURS_WORKER_ENV;
    }
  });
});
