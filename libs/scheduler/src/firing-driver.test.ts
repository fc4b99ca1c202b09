import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '@sched/logging';
import type { Claimer, ClaimGroup, RoundOutcome } from './claimer.js';
import { schedulerConfig } from './config.js';
import type { DueIndex } from './due-index.js';
import { FiringDriver } from './firing-driver.js';
import { PartitionRuntime } from './partition-runtime.js';
import type { ScheduleGenerator } from './schedule-generator.js';
import { createSchedulerMetrics } from './scheduler-metrics.js';

/** A sorted-array index: enough for a unit test of the driver. */
function arrayIndex(): DueIndex {
  const e: { jobId: string; dueMs: number }[] = [];
  return {
    get size() {
      return e.length;
    },
    upsert(jobId, dueMs) {
      this.remove(jobId);
      e.push({ jobId, dueMs });
      e.sort((a, b) => a.dueMs - b.dueMs);
    },
    remove(jobId) {
      const i = e.findIndex((x) => x.jobId === jobId);
      if (i >= 0) e.splice(i, 1);
      return i >= 0;
    },
    nextDueMs: () => e[0]?.dueMs ?? Infinity,
    advance(nowMs, max) {
      let n = 0;
      while (n < e.length && n < max && e[n]!.dueMs <= nowMs) n++;
      return e.splice(0, n);
    },
  };
}

/** A claimer whose transaction takes `ms` in its claim statement. */
function slowClaimer(ms: number, seen: ClaimGroup[][]): Claimer {
  return {
    async claimRound(groups: ClaimGroup[]): Promise<RoundOutcome> {
      seen.push(groups);
      await new Promise((r) => setTimeout(r, ms));
      const outcomes = new Map(groups.map((g) => [g.rt.partition, { claimed: [], notYetDue: [] }]));
      return { outcomes, fenced: [], phasesMs: { connect: 0.5, claim: ms } };
    },
  } as unknown as Claimer;
}

function recordingLog(warnings: { obj: Record<string, unknown>; msg: string }[]): Logger {
  const log = {
    warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }),
    error: () => undefined,
    info: () => undefined,
    debug: () => undefined,
    child: () => log,
  };
  return log as unknown as Logger;
}

async function runOnce(claimMs: number, slowRoundMs: number, jobs = 1) {
  const rt = new PartitionRuntime(0, 1, -1, arrayIndex());
  for (let i = 1; i <= jobs; i++) rt.index.upsert(`job-${i}`, Date.now() - 5);
  const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
  const seen: ClaimGroup[][] = [];
  const metrics = createSchedulerMetrics('test');
  const driver = new FiringDriver({
    // One job per round, so `jobs` jobs make `jobs` rounds (two in flight at once).
    config: schedulerConfig({ slowRoundMs, claimBatchSize: 1, minRoundGapMs: 0 }),
    claimer: slowClaimer(claimMs, seen),
    generator: {} as ScheduleGenerator,
    metrics,
    log: recordingLog(warnings),
    runtimes: () => [rt],
    release: () => undefined,
    applyGeneration: () => undefined,
  });
  driver.fireDue();
  await new Promise((r) => setTimeout(r, Math.ceil(jobs / 2) * claimMs + 150));
  driver.stop();
  const slow = await metrics.registry.getSingleMetricAsString('sched_slow_claim_rounds_total');
  return { warnings, seen, slowCount: Number(/ (\d+)$/m.exec(slow)![1]) };
}

describe('FiringDriver slow-round report', () => {
  it('logs where a late round spent its time and counts it', async () => {
    const { warnings, seen, slowCount } = await runOnce(250, 100);
    expect(seen).toHaveLength(1);
    expect(slowCount).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/slow claim round/);
    expect(warnings[0]!.obj).toMatchObject({ claimMs: 250, connectMs: 0.5, jobs: 1, partitions: 1 });
    expect(warnings[0]!.obj.lateMs as number).toBeGreaterThan(100);
  });

  it('says nothing about an on-time round', async () => {
    const { warnings, seen, slowCount } = await runOnce(1, 5_000);
    expect(seen).toHaveLength(1);
    expect(slowCount).toBe(0);
    expect(warnings).toEqual([]);
  });

  it('logs at most one late round per second, then says how many it left out', async () => {
    const { warnings, seen, slowCount } = await runOnce(150, 50, 4);
    expect(seen).toHaveLength(4);
    expect(slowCount).toBe(4);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.obj).toMatchObject({ leftOutSinceLast: 0 });
  });
});

describe('FiringDriver round gap', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Job a due now, job b due 1 ms later; returns which jobs each round claimed at which fake times. */
  async function twoJobs(minRoundGapMs: number, checkAtMs: number[]) {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'Date'] });
    const t0 = Date.now();
    const rt = new PartitionRuntime(0, 1, -1, arrayIndex());
    rt.index.upsert('a', t0);
    rt.index.upsert('b', t0 + 1);
    const seen: ClaimGroup[][] = [];
    const driver = new FiringDriver({
      config: schedulerConfig({ minRoundGapMs }),
      claimer: slowClaimer(0, seen),
      generator: {} as ScheduleGenerator,
      metrics: createSchedulerMetrics('test'),
      log: recordingLog([]),
      runtimes: () => [rt],
      release: () => undefined,
      applyGeneration: () => undefined,
    });
    driver.fireDue();
    driver.arm();
    const rounds: string[][][] = [];
    let at = 0;
    for (const t of checkAtMs) {
      await vi.advanceTimersByTimeAsync(t - at);
      at = t;
      rounds.push(seen.map((g) => g.flatMap((x) => x.entries.map((e) => e.jobId))));
    }
    driver.stop();
    return rounds;
  }

  it('without a gap, fires each job in its own round as it falls due', async () => {
    const rounds = await twoJobs(0, [5]);
    expect(rounds[0]).toEqual([['a'], ['b']]);
  });

  it('with a gap, the next round waits for it and then carries what fell due meanwhile', async () => {
    const rounds = await twoJobs(20, [5, 19, 25]);
    expect(rounds[0]).toEqual([['a']]);
    expect(rounds[1]).toEqual([['a']]);
    expect(rounds[2]).toEqual([['a'], ['b']]);
  });

  it('refuses a negative or an excessive gap', () => {
    expect(() => schedulerConfig({ minRoundGapMs: -1 })).toThrow(/minRoundGapMs/);
    expect(() => schedulerConfig({ minRoundGapMs: 500 })).toThrow(/minRoundGapMs/);
  });
});
