import { describe, expect, it } from 'vitest';
import { workerConfig } from './config.js';

describe('workerConfig: commitIntervalMs', () => {
  it('defaults to 200 ms, accepts 0 and refuses a negative value with the fix in the message', () => {
    expect(workerConfig({}).commitIntervalMs).toBe(200);
    expect(workerConfig({ commitIntervalMs: 0 }).commitIntervalMs).toBe(0);
    expect(() => workerConfig({ commitIntervalMs: -5 })).toThrow(/commitIntervalMs must be an integer >= 0/);
  });
});

describe('workerConfig: completionLingerMs', () => {
  it('defaults to 25 ms, accepts 0, and refuses a negative value or one near the heartbeat', () => {
    expect(workerConfig({}).completionLingerMs).toBe(25);
    expect(workerConfig({ completionLingerMs: 0 }).completionLingerMs).toBe(0);
    expect(() => workerConfig({ completionLingerMs: -1 })).toThrow(
      /completionLingerMs must be an integer >= 0/,
    );
    expect(() => workerConfig({ completionLingerMs: 6_000 })).toThrow(
      /completionLingerMs must be at most half/,
    );
  });
});

describe('workerConfig: sessionTimeoutMs', () => {
  it('defaults to 3 s and refuses a non-positive value', () => {
    expect(workerConfig({}).sessionTimeoutMs).toBe(3_000);
    expect(() => workerConfig({ sessionTimeoutMs: 0 })).toThrow(/sessionTimeoutMs/);
  });
});
