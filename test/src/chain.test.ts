import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headerString } from '@sched/kafka';
import { createJob, sleep } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// The foundation's one real chain: Avro CreateJob on Kafka → scheduler applies it to Postgres and
// claims it into the outbox → Debezium routes it to sched.dispatch.<queue> → decoded through the
// registry. Nothing faked.
describe('chain: CreateJob → Postgres + outbox → Debezium → dispatch topic', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await Scenario.create('chain');
    await s.startScheduler({ SCHED_DISPATCH_ON_CREATE: 'true' });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('dispatches every job, once, decoded through the registry, never early', async () => {
    const n = 300;
    const due = Date.now() + 2_000;
    const ids = Array.from({ length: n }, (_, i) => `chain-${i}`);
    await s.producer.send(ids.map((id, i) => createJob(id, s.queue, due + (i % 50) * 10)));
    await s.collector.waitFor(() => s.collector.seen.length >= n, 60_000, `${n} dispatch records`);

    const byJob = new Map(s.collector.seen.map((d) => [d.record.jobId, d]));
    expect([...byJob.keys()].sort()).toEqual([...ids].sort());
    for (const d of s.collector.seen) {
      expect(d.record.queue).toBe(s.queue);
      expect(d.record.claimedAtMs).toBeGreaterThanOrEqual(d.record.dueAtMs);
      // No businessKey: the job id, the same for every attempt.
      expect(d.record.idempotencyKey).toBe(d.record.jobId);
      expect(JSON.parse(d.record.payload.toString())).toEqual({ jobId: d.record.jobId });
      // Kafka key = job id; Debezium carries the outbox columns as headers.
      expect(d.message.key?.toString()).toBe(d.record.jobId);
      expect(headerString(d.message.headers.id)).toBe(d.record.eventId);
    }
    // The scheduler watched the records arrive: outbox publication lag is measured on a sample of
    // each fetched batch (at most 32 records of it), never more records than there were.
    const sched = s.schedulers[0]!;
    for (let i = 0; i < 50 && (await sched.metric('sched_outbox_publication_lag_seconds_count')) === 0; i++)
      await sleep(100);
    const observed = await sched.metric('sched_outbox_publication_lag_seconds_count');
    expect(observed).toBeGreaterThan(0);
    expect(observed).toBeLessThanOrEqual(n);
    const states = await s.jobStates();
    expect([...states.values()].every((st) => st === 'DISPATCHED')).toBe(true);
  });

  it('dispatches a job that is already due with its create: one transaction, never early', async () => {
    // Due in the past and due now: dispatched by the create (same transaction, so dispatched_at
    // equals created_at). Due later: left to the wheel and claimed by a firing round.
    const past = `chain-now-past-${Date.now()}`;
    const now = `chain-now-${Date.now()}`;
    const later = `chain-later-${Date.now()}`;
    const before = s.collector.seen.length;
    await s.producer.send([
      createJob(past, s.queue, Date.now() - 60_000),
      createJob(now, s.queue, Date.now()),
      createJob(later, s.queue, Date.now() + 1_500),
    ]);
    await s.collector.waitFor(
      () => [past, now, later].every((id) => s.collector.seen.some((d) => d.record.jobId === id)),
      60_000,
      'three dispatch records',
    );
    const mine = s.collector.seen.slice(before).filter((d) => [past, now, later].includes(d.record.jobId));
    expect(mine).toHaveLength(3);
    for (const d of mine) {
      expect(d.record.claimedAtMs).toBeGreaterThanOrEqual(d.record.dueAtMs);
      expect(d.record.attempt).toBe(1);
    }
    const { rows } = await s.db.pool.query<{ job_id: string; with_create: boolean; state: string }>(
      `SELECT job_id, dispatched_at = created_at AS with_create, state FROM job WHERE job_id = ANY($1::text[])`,
      [[past, now, later]],
    );
    const byId = new Map(rows.map((r) => [r.job_id, r]));
    expect(byId.get(past)).toMatchObject({ with_create: true, state: 'DISPATCHED' });
    expect(byId.get(later)).toMatchObject({ with_create: false, state: 'DISPATCHED' });
    // "Now" from the test's clock: due by database time when applied, so dispatched by its create.
    expect(byId.get(now)).toMatchObject({ with_create: true, state: 'DISPATCHED' });
    const sched = s.schedulers[0]!;
    expect(await sched.metric('sched_jobs_claimed_total', { source: 'create' })).toBeGreaterThanOrEqual(2);
  });
});
