import { describe, expect, it } from 'vitest';
import { sessionTimeoutWithin } from './session-timeout.js';

describe('sessionTimeoutWithin: the session a group member asks the broker for', () => {
  const kafkaDefaults = { minMs: 6_000, maxMs: 1_800_000 };
  it('keeps the configured value inside the range, or when the broker does not say', () => {
    expect(sessionTimeoutWithin(3_000, { minMs: 1_000, maxMs: 1_800_000 }, 'X')).toEqual({ ms: 3_000 });
    expect(sessionTimeoutWithin(3_000, undefined, 'X')).toEqual({ ms: 3_000 });
  });
  it("moves up to the broker's minimum (Kafka's default 6 s) with a note naming the setting", () => {
    const got = sessionTimeoutWithin(3_000, kafkaDefaults, 'SCHED_SESSION_TIMEOUT_MS');
    expect(got.ms).toBe(6_000);
    expect(got.note).toMatch(
      /SCHED_SESSION_TIMEOUT_MS is below the broker's group\.min\.session\.timeout\.ms/,
    );
  });
  it("moves down to the broker's maximum", () => {
    const got = sessionTimeoutWithin(2_000_000, kafkaDefaults, 'X');
    expect(got.ms).toBe(1_800_000);
    expect(got.note).toMatch(/group\.max\.session\.timeout\.ms/);
  });
});
