import { describe, expect, it } from 'vitest';
import { ConfigError } from '@sched/config';
import { schedulerConfig } from './config.js';

describe('schedulerConfig: commitIntervalMs', () => {
  it('defaults to 200 ms, accepts 0 (commit after every batch) and refuses a negative or fractional value', () => {
    expect(schedulerConfig({ ownerId: 'o' }).commitIntervalMs).toBe(200);
    expect(schedulerConfig({ ownerId: 'o', commitIntervalMs: 0 }).commitIntervalMs).toBe(0);
    for (const bad of [-1, 0.5])
      expect(() => schedulerConfig({ ownerId: 'o', commitIntervalMs: bad })).toThrow(
        /commitIntervalMs must be an integer >= 0/,
      );
    expect(() => schedulerConfig({ ownerId: 'o', commitIntervalMs: -1 })).toThrow(ConfigError);
  });
});

describe('schedulerConfig: finishedJobRetentionMs', () => {
  it('defaults to 7 days, accepts 0 (keep forever) and refuses a negative or fractional value', () => {
    expect(schedulerConfig({ ownerId: 'o' }).finishedJobRetentionMs).toBe(7 * 24 * 3600_000);
    expect(schedulerConfig({ ownerId: 'o', finishedJobRetentionMs: 0 }).finishedJobRetentionMs).toBe(0);
    for (const bad of [-1, 1.5])
      expect(() => schedulerConfig({ ownerId: 'o', finishedJobRetentionMs: bad })).toThrow(
        /finishedJobRetentionMs must be an integer >= 0/,
      );
  });
});

describe('schedulerConfig: pruneEveryMs', () => {
  it('defaults to 30 s and refuses zero, negative or fractional periods', () => {
    expect(schedulerConfig({ ownerId: 'o' }).pruneEveryMs).toBe(30_000);
    for (const bad of [0, -5, 2.5])
      expect(() => schedulerConfig({ ownerId: 'o', pruneEveryMs: bad })).toThrow(/pruneEveryMs/);
  });
});

describe('schedulerConfig: sessionTimeoutMs', () => {
  it('defaults to 3 s with a 1 s heartbeat, and refuses a heartbeat above a third of the session', () => {
    const c = schedulerConfig({ ownerId: 'o' });
    expect(c.sessionTimeoutMs).toBe(3_000);
    expect(c.heartbeatIntervalMs).toBe(1_000);
    expect(() => schedulerConfig({ ownerId: 'o', sessionTimeoutMs: 2_000 })).toThrow(/heartbeatIntervalMs/);
  });
});

describe('schedulerConfig: fair firing', () => {
  it('defaults to a 10,000-entry lookahead and weights 7,2,1; refuses weights that are not three integers 1..1000', () => {
    const c = schedulerConfig({ ownerId: 'o' });
    expect(c.fairLookahead).toBe(10_000);
    expect(c.firePriorityWeights).toEqual([7, 2, 1]);
    expect(schedulerConfig({ ownerId: 'o', firePriorityWeights: [1, 1, 1] }).firePriorityWeights).toEqual([
      1, 1, 1,
    ]);
    for (const bad of [
      [0, 1, 1],
      [1, 2],
      [1001, 1, 1],
      [1.5, 1, 1],
    ])
      expect(() =>
        schedulerConfig({ ownerId: 'o', firePriorityWeights: bad as unknown as [number, number, number] }),
      ).toThrow(/firePriorityWeights must be three integers from 1 to 1000/);
    expect(() => schedulerConfig({ ownerId: 'o', fairLookahead: 2_000_000 })).toThrow(/fairLookahead/);
  });
});

describe('schedulerConfig: observeDispatchEveryMs', () => {
  it('defaults to a sample a second and refuses zero, negative or fractional periods', () => {
    expect(schedulerConfig({ ownerId: 'o' }).observeDispatchEveryMs).toBe(1_000);
    expect(schedulerConfig({ ownerId: 'o', observeDispatchEveryMs: 5_000 }).observeDispatchEveryMs).toBe(
      5_000,
    );
    for (const bad of [0, -1, 0.5])
      expect(() => schedulerConfig({ ownerId: 'o', observeDispatchEveryMs: bad })).toThrow(
        /observeDispatchEveryMs/,
      );
  });
});

describe('schedulerConfig: the takeover hold, the reaper budgets and admission control', () => {
  it('has the documented defaults and refuses values out of range, naming them', () => {
    const c = schedulerConfig({ ownerId: 'o' });
    expect(c.takeoverMaxHoldMs).toBe(120_000);
    expect(c.defaultMaxAttempts).toBe(5);
    expect(c.maxUnstartedDispatches).toBe(20);
    expect(c.queueMaxUnstarted).toBe(50_000);
    expect(c.admissionEveryMs).toBe(1_000);
    expect(schedulerConfig({ ownerId: 'o', takeoverMaxHoldMs: 0, queueMaxUnstarted: 0 })).toMatchObject({
      takeoverMaxHoldMs: 0,
      queueMaxUnstarted: 0,
    });
    const bad: [string, number, RegExp][] = [
      ['takeoverMaxHoldMs', -1, /takeoverMaxHoldMs/],
      ['defaultMaxAttempts', 0, /SCHED_DEFAULT_MAX_ATTEMPTS/],
      ['maxUnstartedDispatches', 0, /SCHED_MAX_UNSTARTED_DISPATCHES/],
      ['queueMaxUnstarted', -5, /SCHED_QUEUE_MAX_UNSTARTED/],
      ['admissionEveryMs', 0, /SCHED_ADMISSION_EVERY_MS/],
    ];
    for (const [key, value, named] of bad)
      expect(() => schedulerConfig({ ownerId: 'o', [key]: value })).toThrow(named);
  });
});
