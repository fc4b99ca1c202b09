import { describe, expect, it } from 'vitest';
import { workerConfig } from './config.js';

describe('workerConfig: commitIntervalMs', () => {
  it('defaults to 200 ms, accepts 0 and refuses a negative value with the fix in the message', () => {
    expect(workerConfig({}).commitIntervalMs).toBe(200);
    expect(workerConfig({ commitIntervalMs: 0 }).commitIntervalMs).toBe(0);
    expect(() => workerConfig({ commitIntervalMs: -5 })).toThrow(/commitIntervalMs must be an integer >= 0/);
  });
});
