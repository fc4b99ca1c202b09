import { describe, expect, it } from 'vitest';
import type { OverdueJob } from '@sched/store';
import { CatchUpDrain } from './catch-up.js';
import type { ClaimGroup, RoundOutcome } from './claimer.js';
import { FireTags } from './fair-ready.js';
import { PartitionRuntime } from './partition-runtime.js';
import { createSchedulerMetrics } from './scheduler-metrics.js';
import { wheelIndexFactory } from './wheel-index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A drain over one partition whose claimer claims every id asked for; the read takes `readMs`. */
function drain(opts: {
  readMs: number;
  backlog: number;
  rate: number;
  periodMs: number;
  stopAfter?: number;
  claimBatchSize?: number;
  claimMs?: number;
}) {
  const rt = new PartitionRuntime(0, 1, -1, wheelIndexFactory()());
  let left = Array.from({ length: opts.backlog }, (_, i) => `j-${i}`);
  let reads = 0;
  let claimed = 0;
  let reading = 0;
  let claimsWhileReading = 0;
  const asked: string[] = [];
  const d = new CatchUpDrain({
    config: {
      claimBatchSize: opts.claimBatchSize ?? 10,
      catchUpRatePerSec: opts.rate,
      reconcileEveryMs: opts.periodMs,
      reconcileGraceMs: 0,
    },
    claimer: {
      async overdue(_rts, limit): Promise<OverdueJob[]> {
        reads++;
        reading++;
        // What the statement sees is the backlog when it starts, as Postgres's snapshot.
        const seen = left.slice(0, limit);
        await sleep(opts.readMs);
        reading--;
        return seen.map((jobId) => ({ jobId, partition: 0, tenantId: 't', priority: 0, dueAtMs: 0 }));
      },
      async claimRound(groups: ClaimGroup[]): Promise<RoundOutcome> {
        if (reading > 0) claimsWhileReading++;
        if (opts.claimMs) await sleep(opts.claimMs);
        const ids = new Set(groups.flatMap((g) => g.entries.map((e) => e.jobId)));
        asked.push(...ids);
        // Only what is still overdue is claimed (a row claimed before is not, as in the database).
        const got = left.filter((id) => ids.has(id));
        left = left.filter((id) => !ids.has(id));
        claimed += got.length;
        const outcome = {
          claimed: got.map((jobId) => ({ jobId }) as never),
          notYetDue: [],
        };
        return { outcomes: new Map([[0, outcome]]), fenced: [], phasesMs: { connect: 0, claim: 0 } };
      },
    },
    metrics: createSchedulerMetrics('test'),
    fireTags: new FireTags(),
    runtime: (p) => (p === 0 ? rt : undefined),
    release: () => undefined,
    stopping: () => opts.stopAfter !== undefined && claimed >= opts.stopAfter,
  });
  return {
    drain: d,
    pass: () => d.pass([rt]),
    reads: () => reads,
    claimed: () => claimed,
    claimsWhileReading: () => claimsWhileReading,
    askedIds: () => asked,
  };
}

describe('CatchUpDrain', () => {
  it('claims a whole plan even when reading it took longer than a period (a large backlog)', async () => {
    // Period 200 ms, plan 200 (the rate's worth of a period), read 300 ms: the claims get their own period.
    const d = drain({ readMs: 300, backlog: 1_000, rate: 1_000, periodMs: 200 });
    expect(await d.pass()).toBe(200);
    // The second read started ahead, for the next plan: reads are slow and the backlog is larger.
    expect(d.reads()).toBe(2);
  });

  it('never claims more than the rate, waiting for its window within the pass', async () => {
    const d = drain({ readMs: 0, backlog: 10_000, rate: 100, periodMs: 1_500 });
    const t0 = Date.now();
    const got = await d.pass();
    const elapsed = Date.now() - t0;
    // 100 at once, 100 more each time the 1.1 s window has moved on: it waited, and kept to the rate.
    expect(got).toBeGreaterThanOrEqual(200);
    expect(elapsed).toBeGreaterThanOrEqual(1_000);
    expect(got).toBeLessThanOrEqual(100 * (1 + Math.floor(elapsed / 1_100)));
    // A pass ends within two periods (its claims after the last read get one period).
    expect(elapsed).toBeLessThan(3_000 + 500);
  });

  it('stops claiming as soon as the scheduler stops', async () => {
    const d = drain({ readMs: 0, backlog: 1_000, rate: 1_000, periodMs: 2_000, stopAfter: 30 });
    expect(await d.pass()).toBe(30);
  });

  it('keeps a plan over several passes when its read took longer than a quarter of a period', async () => {
    // Read 600 ms, period 200 ms: after the first read a plan serves 4 x 600 ms at the rate.
    const d = drain({ readMs: 600, backlog: 5_000, rate: 1_000, periodMs: 200 });
    expect(await d.pass()).toBe(200); // the first plan: a period's worth
    // 4 x the read, as the machine's timers kept it (a timer can fire a little early or late).
    expect(d.drain.planSpanMs()).toBeGreaterThanOrEqual(2_300);
    expect(d.drain.planSpanMs()).toBeLessThan(4_000);
    await d.pass(); // reads the larger plan and claims what the rate still allows of it
    expect(d.reads()).toBe(2);
    const before = d.claimed();
    expect(before).toBeLessThanOrEqual(1_000);
    await sleep(1_200); // the rate window moves on
    await d.pass();
    await d.pass();
    // Claimed from the plan held since the second read: at most one more read, started ahead once
    // that plan neared its end (a read a pass would make four).
    expect(d.claimed()).toBeGreaterThan(before);
    expect(d.reads()).toBeLessThanOrEqual(3);
  });

  it('reads the next plan ahead while it claims the held one, when reads are slow', async () => {
    const d = drain({ readMs: 300, backlog: 20_000, rate: 2_000, periodMs: 200, claimBatchSize: 100 });
    const t0 = Date.now();
    while (Date.now() - t0 < 3_000) await d.pass();
    expect(d.claimsWhileReading()).toBeGreaterThan(0);
    // Never a claim beyond the rate: 2,000 in any 1.1 s window.
    expect(d.claimed()).toBeLessThanOrEqual(2_000 * (1 + Math.ceil((Date.now() - t0) / 1_100)));
    // No id asked for twice: what a read ahead found that the plan before it held was left out.
    expect(d.askedIds().length).toBe(new Set(d.askedIds()).size);
  });

  it('keeps the drain order when a plan expires before it is used up: its untried rows come next', async () => {
    // Read 300 ms, claims of 10 taking 50 ms, 200 a 1.1 s: the first plan (60) starts a read
    // ahead after its first batch and has 20 rows left untried when it expires.
    const d = drain({ readMs: 300, backlog: 1_000, rate: 200, periodMs: 300, claimMs: 50 });
    await d.pass();
    await sleep(d.drain.planSpanMs() + 100);
    await d.pass();
    const asked = d.askedIds();
    expect(asked.length).toBeGreaterThan(60); // the second plan was claimed from
    expect(asked).toEqual(asked.map((_, i) => `j-${i}`));
  });

  it('reads again once a held plan has expired', async () => {
    // Claims of 10 take 50 ms: a 300 ms period (200 ms of claims) leaves most of a plan held, and
    // a 300 ms read makes that plan last 1.2 s.
    const opts = { readMs: 300, backlog: 1_000, rate: 100_000, periodMs: 300, claimMs: 50 };
    const fresh = drain(opts);
    await fresh.pass();
    await sleep(50);
    await fresh.pass();
    expect(fresh.reads()).toBe(1); // the held plan served the second pass
    const stale = drain(opts);
    await stale.pass();
    await sleep(stale.drain.planSpanMs() + 200); // past the plan's span
    await stale.pass();
    expect(stale.reads()).toBe(2);
  });

  it('still reads and claims with a period of 100 ms or less', async () => {
    const d = drain({ readMs: 0, backlog: 100, rate: 1_000, periodMs: 50 });
    expect(await d.pass()).toBeGreaterThan(0);
  });

  it('bounds a plan: at most 30 s of claims and 200,000 rows', async () => {
    const d = drain({ readMs: 20_000, backlog: 0, rate: 20_000, periodMs: 2_000 }).drain;
    (d as unknown as { lastReadMs: number }).lastReadMs = 20_000;
    expect(d.planSpanMs()).toBe(30_000);
    expect(d.planSize()).toBe(200_000);
  });
});
