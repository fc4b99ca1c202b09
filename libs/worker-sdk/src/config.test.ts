import { describe, expect, it } from 'vitest';
import { workerConfig } from './config.js';
import { sessionTimeoutWithin } from './worker.js';

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

describe('sessionTimeoutWithin: the session a worker asks the broker for', () => {
  const kafkaDefaults = { minMs: 6_000, maxMs: 1_800_000 };
  it('keeps the configured value inside the range, or when the broker does not say', () => {
    expect(sessionTimeoutWithin(3_000, { minMs: 1_000, maxMs: 1_800_000 })).toEqual({ ms: 3_000 });
    expect(sessionTimeoutWithin(3_000, undefined)).toEqual({ ms: 3_000 });
  });
  it("moves up to the broker's minimum (Kafka's default 6 s) with a note naming the setting", () => {
    const got = sessionTimeoutWithin(3_000, kafkaDefaults);
    expect(got.ms).toBe(6_000);
    expect(got.note).toMatch(/group\.min\.session\.timeout\.ms/);
  });
  it("moves down to the broker's maximum", () => {
    const got = sessionTimeoutWithin(2_000_000, kafkaDefaults);
    expect(got.ms).toBe(1_800_000);
    expect(got.note).toMatch(/group\.max\.session\.timeout\.ms/);
  });
});
