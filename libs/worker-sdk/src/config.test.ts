import { describe, expect, it } from 'vitest';
import { fairnessFromEnv, workerConfig } from './config.js';
import { dispatchConsumerOptions } from './worker.js';

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

describe('workerConfig: fetchMaxBytesPerPartition', () => {
  it('defaults to 256 KiB and refuses a non-positive value', () => {
    expect(workerConfig({}).fetchMaxBytesPerPartition).toBe(262_144);
    expect(workerConfig({ fetchMaxBytesPerPartition: 65_536 }).fetchMaxBytesPerPartition).toBe(65_536);
    expect(() => workerConfig({ fetchMaxBytesPerPartition: 0 })).toThrow(/fetchMaxBytesPerPartition/);
  });

  it("bounds the dispatch consumer's fetches", () => {
    const c = workerConfig({ fetchMaxBytesPerPartition: 131_072 });
    expect(dispatchConsumerOptions(c, ['sched.dispatch.a'], 3_000)).toMatchObject({
      topics: ['sched.dispatch.a'],
      maxBytesPerPartition: 131_072,
      maxWaitTimeMs: 10,
      sessionTimeoutMs: 3_000,
    });
  });
});

describe('workerConfig: sessionTimeoutMs', () => {
  it('defaults to 3 s and refuses a non-positive value', () => {
    expect(workerConfig({}).sessionTimeoutMs).toBe(3_000);
    expect(() => workerConfig({ sessionTimeoutMs: 0 })).toThrow(/sessionTimeoutMs/);
  });
});

describe('workerConfig: liveness', () => {
  it('defaults to 10 s beaten every 2 s, accepts 0 (off), and refuses a beat slower than half the TTL', () => {
    const c = workerConfig({});
    expect([c.livenessTtlMs, c.livenessEveryMs]).toEqual([10_000, 2_000]);
    expect(workerConfig({ livenessTtlMs: 0, livenessEveryMs: 0 }).livenessTtlMs).toBe(0);
    expect(() => workerConfig({ livenessTtlMs: -1 })).toThrow(/livenessTtlMs must be an integer >= 0/);
    expect(() => workerConfig({ livenessTtlMs: 3_000 })).toThrow(/livenessEveryMs must be at most half/);
    expect(() => workerConfig({ livenessEveryMs: 0 })).toThrow(/livenessEveryMs/);
  });
});

describe('workerConfig: fair admission', () => {
  it('defaults to weights 7/2/1 and no tenant cap, and names what is wrong', () => {
    const c = workerConfig({});
    expect(c.priorityWeights).toEqual([7, 2, 1]);
    expect(c.tenantConcurrency).toBe(0);
    expect(c.tenantConcurrencyLimits).toEqual({});
    expect(() => workerConfig({ priorityWeights: [1, 0, 1] })).toThrow(
      /priorityWeights must be three integers from 1 to 1000/,
    );
    expect(() => workerConfig({ tenantConcurrency: -1 })).toThrow(
      /tenantConcurrency must be an integer >= 0/,
    );
    expect(() => workerConfig({ tenantConcurrencyLimits: { acme: 2.5 } })).toThrow(
      /tenantConcurrencyLimits.acme must be an integer >= 0/,
    );
  });

  it('reads the fairness variables, and refuses ones that do not parse', () => {
    expect(
      fairnessFromEnv({
        SCHED_WORKER_PRIORITY_WEIGHTS: '5, 3,1',
        SCHED_WORKER_TENANT_CONCURRENCY: '8',
        SCHED_WORKER_TENANT_LIMITS: 'acme=50, beta=0,',
      }),
    ).toEqual({
      priorityWeights: [5, 3, 1],
      tenantConcurrency: 8,
      tenantConcurrencyLimits: { acme: 50, beta: 0 },
    });
    expect(fairnessFromEnv({})).toEqual({});
    expect(() => fairnessFromEnv({ SCHED_WORKER_PRIORITY_WEIGHTS: '5,3' })).toThrow(
      /SCHED_WORKER_PRIORITY_WEIGHTS="5,3" must be three integers from 1 to 1000/,
    );
    expect(() => fairnessFromEnv({ SCHED_WORKER_TENANT_CONCURRENCY: 'lots' })).toThrow(
      /SCHED_WORKER_TENANT_CONCURRENCY="lots"/,
    );
    expect(() => fairnessFromEnv({ SCHED_WORKER_TENANT_LIMITS: 'acme=5,beta' })).toThrow(
      /"beta" must be tenant=cap/,
    );
  });
});
