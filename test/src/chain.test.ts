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
    await s.startScheduler();
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
    // The scheduler watched each record arrive: outbox publication lag is measured.
    const sched = s.schedulers[0]!;
    for (let i = 0; i < 50 && (await sched.metric('sched_outbox_publication_lag_seconds_count')) < n; i++)
      await sleep(100);
    expect(await sched.metric('sched_outbox_publication_lag_seconds_count')).toBeGreaterThanOrEqual(n);
    const states = await s.jobStates();
    expect([...states.values()].every((st) => st === 'DISPATCHED')).toBe(true);
  });
});
