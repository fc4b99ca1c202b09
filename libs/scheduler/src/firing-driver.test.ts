import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '@sched/logging';
import type { Claimer, ClaimGroup, RoundOutcome } from './claimer.js';
import { schedulerConfig } from './config.js';
import type { DueEntry, DueIndex } from './due-index.js';
import { FireTags } from './fair-ready.js';
import { FiringDriver } from './firing-driver.js';
import { PartitionRuntime } from './partition-runtime.js';
import type { ScheduleGenerator } from './schedule-generator.js';
import { createSchedulerMetrics } from './scheduler-metrics.js';

/** A sorted-array index: enough for a unit test of the driver. */
function arrayIndex(): DueIndex {
  const e: DueEntry[] = [];
  return {
    get size() {
      return e.length;
    },
    upsert(jobId, dueMs, tag) {
      const old = e.find((x) => x.jobId === jobId);
      this.remove(jobId);
      e.push({ jobId, dueMs, tag: tag ?? old?.tag ?? 0 });
      e.sort((a, b) => a.dueMs - b.dueMs);
    },
    remove(jobId) {
      const i = e.findIndex((x) => x.jobId === jobId);
      if (i >= 0) e.splice(i, 1);
      return i >= 0;
    },
    has: (jobId) => e.some((x) => x.jobId === jobId),
    dueMsOf: (jobId) => e.find((x) => x.jobId === jobId)?.dueMs,
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

/** A driver over one partition runtime, with a claimer that records its rounds. */
function driverFor(
  rt: PartitionRuntime,
  seen: ClaimGroup[][],
  config: Parameters<typeof schedulerConfig>[0],
  opts: { claimMs?: number; log?: Logger; metrics?: ReturnType<typeof createSchedulerMetrics> } = {},
): FiringDriver {
  return new FiringDriver({
    config: schedulerConfig(config),
    claimer: slowClaimer(opts.claimMs ?? 0, seen),
    generator: {} as ScheduleGenerator,
    metrics: opts.metrics ?? createSchedulerMetrics('test'),
    log: opts.log ?? recordingLog([]),
    runtimes: () => [rt],
    release: () => undefined,
    applyGeneration: () => undefined,
  });
}

async function runOnce(claimMs: number, slowRoundMs: number, jobs = 1) {
  const rt = new PartitionRuntime(0, 1, -1, arrayIndex());
  for (let i = 1; i <= jobs; i++) rt.index.upsert(`job-${i}`, Date.now() - 5);
  const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
  const seen: ClaimGroup[][] = [];
  const metrics = createSchedulerMetrics('test');
  // One job per round, so `jobs` jobs make `jobs` rounds (two in flight at once).
  const driver = driverFor(
    rt,
    seen,
    { slowRoundMs, claimBatchSize: 1, minRoundGapMs: 0 },
    { claimMs, log: recordingLog(warnings), metrics },
  );
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
    const driver = driverFor(rt, seen, { minRoundGapMs });
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

  describe('fair lookahead', () => {
    /** 50 jobs of tenant big due first, then 5 of tenant small, then 2 high-priority ones of big. */
    async function firstRound(fairLookahead: number) {
      const t0 = Date.now();
      const tags = new FireTags();
      const rt = new PartitionRuntime(0, 1, -1, arrayIndex());
      for (let i = 0; i < 50; i++) rt.index.upsert(`big-${i}`, t0 - 100 + i, tags.tag('big', 0));
      for (let i = 0; i < 5; i++) rt.index.upsert(`small-${i}`, t0 - 20 + i, tags.tag('small', 0));
      for (let i = 0; i < 2; i++) rt.index.upsert(`urgent-${i}`, t0 - 5 + i, tags.tag('big', 5));
      const seen: ClaimGroup[][] = [];
      const driver = driverFor(rt, seen, {
        claimBatchSize: 10,
        claimConcurrency: 1,
        minRoundGapMs: 0,
        fairLookahead,
      });
      driver.fireDue();
      await new Promise((r) => setTimeout(r, 50));
      driver.stop();
      const rounds = seen.map((groups) => groups.flatMap((g) => g.entries.map((e) => e.jobId)));
      return { rounds, rt };
    }

    it('serves high priority first, then equal shares per tenant, each in due order', async () => {
      const { rounds, rt } = await firstRound(10_000);
      expect(rounds[0]).toEqual([
        'urgent-0',
        'urgent-1',
        'big-0',
        'big-1',
        'big-2',
        'big-3',
        'small-0',
        'small-1',
        'small-2',
        'small-3',
      ]);
      // Everything is claimed in the end, each job once, none left waiting.
      const all = rounds.flat();
      expect(all).toHaveLength(57);
      expect(new Set(all).size).toBe(57);
      expect(rt.ready.size).toBe(0);
      expect(rt.index.size).toBe(0);
    });

    it('holds at most the lookahead per partition out of the wheel', async () => {
      const { rounds } = await firstRound(12);
      // 12 entries out of the wheel (due order: big-0..11), 10 of them claimed: nothing fairer yet.
      expect(rounds[0]).toEqual(Array.from({ length: 10 }, (_, i) => `big-${i}`));
      expect(rounds.flat()).toHaveLength(57);
    });

    it('with no lookahead, takes entries in due order only', async () => {
      const { rounds } = await firstRound(0);
      expect(rounds[0]).toEqual(Array.from({ length: 10 }, (_, i) => `big-${i}`));
      expect(rounds.flat()).toHaveLength(57);
    });
  });
});

describe('FiringDriver takeover hold', () => {
  for (const fairLookahead of [0, 10_000]) {
    it(`claims nothing of a held partition until its hold ends (fairLookahead ${fairLookahead})`, async () => {
      const rt = new PartitionRuntime(0, 1, -1, arrayIndex());
      rt.index.upsert('due-1', Date.now() - 5);
      rt.catchUpTo = 4; // commands 0-4 on Kafka at takeover, none applied
      const seen: ClaimGroup[][] = [];
      const driver = driverFor(rt, seen, { minRoundGapMs: 0, fairLookahead, claimBatchSize: 2_000 });
      driver.fireDue();
      driver.arm(true);
      await new Promise((r) => setTimeout(r, 50));
      expect(seen).toEqual([]);
      expect(rt.ready.size).toBe(0);
      rt.appliedOffset = 4;
      driver.arm(true);
      await new Promise((r) => setTimeout(r, 50));
      driver.stop();
      expect(seen.flat().flatMap((g) => g.entries.map((e) => e.jobId))).toEqual(['due-1']);
    });
  }
});
