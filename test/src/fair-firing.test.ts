import { afterAll, describe, expect, it } from 'vitest';
import type { CommandInput } from '@sched/contracts';
import { createJob, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

/**
 * A burst larger than a firing round: tenant `big` has 4,000 jobs due at T, tenant `small` 20 due
 * at T + 20 ms, and `big` one high-priority job due at T + 30 ms. In due order, the small tenant's
 * jobs and the urgent one are claimed after all 4,000; with the fair lookahead (the default), in
 * the first rounds after they fall due. Run both ways on the real stack, so the test shows it can
 * fail.
 */
describe('fair firing in a burst: priority class, then tenant shares', () => {
  const scenarios: Scenario[] = [];
  afterAll(async () => {
    for (const s of scenarios) await s.close();
  });

  /**
   * A scenario whose scheduler fires in small rounds, one at a time (a burst of thousands then
   * takes many rounds, as 100k do with the defaults), with `env` on top.
   */
  async function smallRounds(name: string, env: Record<string, string>): Promise<Scenario> {
    const s = await Scenario.create(name, 2);
    scenarios.push(s);
    await s.db.pool.query("INSERT INTO tenant (tenant_id) VALUES ('big'), ('small') ON CONFLICT DO NOTHING");
    await s.startScheduler({ SCHED_CLAIM_BATCH_SIZE: '100', SCHED_CLAIM_CONCURRENCY: '1', ...env });
    return s;
  }

  /** Sends the jobs, waits for every dispatch record; each once, none early. */
  async function dispatchAll(s: Scenario, jobs: CommandInput[]) {
    await s.producer.send(jobs);
    await until('every job dispatched', 60_000, async () => s.collector.seen.length >= jobs.length);
    const records = s.collector.seen.map((d) => d.record);
    expect(new Set(records.map((r) => r.jobId)).size).toBe(jobs.length);
    expect(records.filter((r) => r.claimedAtMs < r.dueAtMs)).toEqual([]); // never early
    return records;
  }

  async function burst(lookahead: number | null) {
    const s = await smallRounds(
      lookahead === 0 ? 'unfair' : 'fair',
      lookahead === null ? {} : { SCHED_FAIR_LOOKAHEAD: String(lookahead) },
    );
    const T = Date.now() + 8_000;
    const big = 4_000;
    const jobs = [
      ...Array.from({ length: big }, (_, i) => ({ ...createJob(`big-${i}`, s.queue, T), tenantId: 'big' })),
      ...Array.from({ length: 20 }, (_, i) => ({
        ...createJob(`small-${i}`, s.queue, T + 20),
        tenantId: 'small',
      })),
      { ...createJob('urgent', s.queue, T + 30, { priority: 5 }), tenantId: 'big' },
    ];
    const records = await dispatchAll(s, jobs);
    const bigClaims = records.filter((r) => r.jobId.startsWith('big-')).map((r) => r.claimedAtMs);
    // How many of big's jobs were claimed before each of the others.
    const before = (jobId: string) => {
      const at = records.find((r) => r.jobId === jobId)!.claimedAtMs;
      return bigClaims.filter((c) => c < at).length;
    };
    const smallBefore = Math.max(...Array.from({ length: 20 }, (_, i) => before(`small-${i}`)));
    const urgentBefore = before('urgent');
    const lastBig = Math.max(...bigClaims);
    console.log(
      `fair firing (lookahead ${lookahead ?? 'default'}): big jobs claimed before the last small one ${smallBefore}, before the urgent one ${urgentBefore}, of ${big}; burst claimed over ${lastBig - T} ms`,
    );
    return { smallBefore, urgentBefore, big };
  }

  it('in due order only (no lookahead), the others wait for the whole burst', async () => {
    const r = await burst(0);
    expect(r.smallBefore).toBeGreaterThan(r.big * 0.9);
    expect(r.urgentBefore).toBeGreaterThan(r.big * 0.9);
  });

  it('with the lookahead, the small tenant and the urgent job go within the first rounds', async () => {
    const r = await burst(null);
    expect(r.smallBefore).toBeLessThan(r.big / 2);
    expect(r.urgentBefore).toBeLessThan(r.big / 2);
  });

  /**
   * 2,000 high-priority jobs and then 40 low-priority ones, all due at T, fired in rounds of 100:
   * with the default weights (7,2,1) the low class gets its share of every round; with weights
   * that make the order all but strict (1000,1,1) it waits for the high class to be done.
   */
  async function classes(weights: string | null) {
    const s = await smallRounds(
      weights === null ? 'weighted' : 'strict',
      weights === null ? {} : { SCHED_FIRE_PRIORITY_WEIGHTS: weights },
    );
    const T = Date.now() + 8_000;
    const high = 2_000;
    const jobs = [
      ...Array.from({ length: high }, (_, i) => createJob(`high-${i}`, s.queue, T, { priority: 5 })),
      ...Array.from({ length: 40 }, (_, i) => createJob(`low-${i}`, s.queue, T, { priority: -5 })),
    ];
    const records = await dispatchAll(s, jobs);
    const highClaims = records.filter((r) => r.jobId.startsWith('high-')).map((r) => r.claimedAtMs);
    const lastLow = Math.max(...records.filter((r) => r.jobId.startsWith('low-')).map((r) => r.claimedAtMs));
    const highBefore = highClaims.filter((c) => c < lastLow).length;
    console.log(
      `fair firing (weights ${weights ?? 'default'}): high jobs claimed before the last low one ${highBefore} of ${high}`,
    );
    return { highBefore, high };
  }

  it('weights nearly strict (1000,1,1): the low class waits for the whole high-priority burst', async () => {
    const r = await classes('1000,1,1');
    expect(r.highBefore).toBeGreaterThan(r.high * 0.9);
  });

  it('default weights (7,2,1): the low class progresses during a high-priority burst', async () => {
    const r = await classes(null);
    // 40 low jobs at one in eight claims: done within ~300 high ones, far from all 2,000.
    expect(r.highBefore).toBeLessThan(r.high / 2);
  });
});
