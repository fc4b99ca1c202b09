import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Scenario } from './support/scenario.js';

/**
 * A backlog large enough that a catch-up read takes longer than a quarter of the reconcile period
 * (60,000 rows against a 100 ms period): plans are held across passes and the next one is read
 * ahead while the held one is claimed. The drain order must survive that: every job once, every
 * priority-5 job claimed before any priority-0 one.
 */
describe('catch-up of a backlog whose reads are slow: held plans, read ahead, order kept', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await Scenario.create('catch_large', 2);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('claims 60,000 overdue jobs once each, priority 5 before priority 0', async () => {
    const n = 60_000;
    // As an outage leaves them: SCHEDULED, overdue by 10-11 minutes, one in ten at priority 5.
    await s.db.pool.query(
      `INSERT INTO job (job_id, partition, tenant_id, queue, state, due_at, priority, payload)
       SELECT 'lg-' || g, g % 2, 'default', $2, 'SCHEDULED',
              now() - interval '11 minutes' + (g % 60000) * interval '1 millisecond',
              CASE WHEN g % 10 = 0 THEN 5 ELSE 0 END, '\\x00'::bytea
       FROM generate_series(1, $1::int) g`,
      [n, s.queue],
    );
    await s.db.pool.query('ANALYZE job');
    const p = await s.startScheduler({
      SCHED_RECONCILE_EVERY_MS: '100',
      SCHED_CATCH_UP_RATE_PER_SEC: '20000',
      // No worker starts these: admission control would pause the queue at 50,000 unstarted.
      SCHED_QUEUE_MAX_UNSTARTED: '0',
    });
    await s.collector.waitFor(() => s.collector.seen.length >= n, 120_000, 'the backlog');
    const records = s.collector.seen.map((d) => d.record);
    expect(records).toHaveLength(n);
    expect(new Set(records.map((r) => r.jobId)).size).toBe(n);
    const firstLow = Math.min(...records.filter((r) => r.priority === 0).map((r) => r.claimedAtMs));
    const lastHigh = Math.max(...records.filter((r) => r.priority === 5).map((r) => r.claimedAtMs));
    const reads = await p.metric('sched_catch_up_read_seconds_count');
    const readSeconds = await p.metric('sched_catch_up_read_seconds_sum');
    console.log(
      `catch-up of ${n}: ${reads} reads, ${((readSeconds / Math.max(1, reads)) * 1000).toFixed(0)} ms each on average; last priority-5 claim ${lastHigh - firstLow} ms after the first priority-0 one`,
    );
    expect(lastHigh).toBeLessThanOrEqual(firstLow);
    expect(await p.metric('sched_catch_up_claimed_total')).toBe(n);
    // The reads were slow enough for held plans and reads ahead (> 25 ms against a 100 ms period).
    expect(readSeconds / reads).toBeGreaterThan(0.025);
  });
});
