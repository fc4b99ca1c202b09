import { randomBytes } from 'node:crypto';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import type { CommandRejected } from '@sched/contracts';
import { Collector, cancelJob, contracts, createJob, kafka, rescheduleJob, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// Invariant 10 (hostile input never stops the platform): a backlog of rejectable commands of any
// size is rejected, every one of them, and the partition moves on. Before, the rejections of one
// fetched batch (up to the fetch size, several MB) went out in one produce request, which the
// broker refused as larger than its max.message.bytes; the consumer restarted on the same batch
// for good, and the idempotent producer's sequence errors followed.

async function lag(s: Scenario): Promise<number> {
  const admin = await kafka().admin();
  try {
    return await admin.groupLag(s.groupId, s.commandsTopic);
  } finally {
    await admin.disconnect();
  }
}

/** The scheduler's lines that say it crashed or restarted its consumer, and its restart count. */
async function trouble(p: Awaited<ReturnType<Scenario['startScheduler']>>) {
  const lines = p.output().split('\n');
  return {
    tooLarge: lines.filter((l) => l.includes('larger than the max message size')).length,
    sequence: lines.filter((l) => /out of order sequence|OUT_OF_ORDER_SEQUENCE/i.test(l)).length,
    restarts: await p.metric('sched_consumer_restarts'),
  };
}

describe('a backlog of rejectable commands never stops a partition', () => {
  let s: Scenario | undefined;
  let rejected: Collector | undefined;
  afterEach(async () => {
    await rejected?.stop();
    await s?.close();
    rejected = undefined;
    s = undefined;
  });

  it('rejects 3 × 400 records of 2 KB on one partition, produced while the scheduler was stopped', async () => {
    s = await Scenario.create('rejwedge', 12);
    const a = await s.startScheduler();
    rejected = await new Collector([s.rejectedTopic], false).start();
    a.signal('SIGSTOP');
    // Same key: every record on one partition; 2.4 MB in all, each record small and accepted.
    for (let round = 0; round < 3; round++)
      await s.producer.sendRaw(
        Array.from({ length: 400 }, () => ({ key: 'same-key', value: randomBytes(2_000) })),
      );
    a.signal('SIGCONT');
    const t0 = Date.now();
    await until('1,200 rejections on the rejected topic', 60_000, async () => rejected!.raw.length >= 1_200);
    await until('lag 0', 30_000, async () => (await lag(s!)) === 0);
    const took = Date.now() - t0;
    const t = await trouble(a);
    expect(rejected.raw.length).toBe(1_200);
    expect(t).toEqual({ tooLarge: 0, sequence: 0, restarts: 0 });
    const c = await contracts();
    const first = await c.decodeRejected(rejected.raw[0]!.value);
    expect(first.reasonCode).toBe('UNDECODABLE');
    expect(first.originalValue?.length).toBe(2_000);
    expect(first.originalValueBytes).toBeNull();
    console.log(
      `rejection backlog: 1,200 × 2 KB on one partition rejected and lag 0 in ${took} ms after SIGCONT`,
    );
  });

  it('rejects 10 records of 900 KB on one partition', async () => {
    s = await Scenario.create('rejbig', 4);
    const a = await s.startScheduler();
    rejected = await new Collector([s.rejectedTopic], false).start();
    a.signal('SIGSTOP');
    const values = Array.from({ length: 10 }, () => randomBytes(900 * 1024));
    for (const value of values) await s.producer.sendRaw([{ key: 'big', value }]);
    a.signal('SIGCONT');
    await until('10 rejections', 60_000, async () => rejected!.raw.length >= 10);
    await until('lag 0', 30_000, async () => (await lag(s!)) === 0);
    expect(await trouble(a)).toEqual({ tooLarge: 0, sequence: 0, restarts: 0 });
    const c = await contracts();
    const decoded = await Promise.all(rejected.raw.map((m) => c.decodeRejected(m.value)));
    // Whole, each carrying its original bytes, in offset order.
    expect(decoded.map((d) => Buffer.compare(d.originalValue!, values[Number(d.sourceOffset)]!))).toEqual(
      Array(10).fill(0),
    );
    expect(decoded.map((d) => Number(d.sourceOffset))).toEqual([...Array(10).keys()]);
  });

  it('a record too large to forward whole is rejected with its first bytes and its offset', async () => {
    // The command topic takes 3 MB records; the rejected topic 1 MB batches.
    s = await Scenario.create('rejhuge', 1, {
      commands: { 'max.message.bytes': '3200000' },
      rejected: { 'max.message.bytes': '1048588' },
    });
    const a = await s.startScheduler();
    rejected = await new Collector([s.rejectedTopic], false).start();
    const huge = randomBytes(2_500_000);
    const bigKey = Buffer.alloc(300_000, 'k').toString();
    await s.producer.sendRaw([{ key: 'huge', value: huge }]);
    await s.producer.sendRaw([{ key: bigKey, value: huge }]);
    await until('2 rejections', 60_000, async () => rejected!.raw.length >= 2);
    await until('lag 0', 30_000, async () => (await lag(s!)) === 0);
    const c = await contracts();
    const [r1, r2] = await Promise.all(rejected.raw.map((m) => c.decodeRejected(m.value)));
    for (const r of [r1!, r2!]) {
      expect(r.originalValueBytes).toBe(2_500_000);
      expect(r.originalValue!.length).toBeGreaterThan(500_000);
      expect(Buffer.compare(r.originalValue!, huge.subarray(0, r.originalValue!.length))).toBe(0);
    }
    expect(r1!.sourceOffset).toBe('0');
    expect(r1!.originalKeyBytes).toBeNull();
    expect(r2!.sourceOffset).toBe('1');
    expect(r2!.originalKeyBytes).toBe(300_000);
    expect(r2!.originalKey!.length).toBe(1_024);
    expect(await a.metric('sched_rejections_truncated_total')).toBe(2);
    // The partition moves on: a job created afterwards runs.
    await s.producer.send([createJob('after-huge', s.queue, Date.now() + 1_000)]);
    await s.collector.waitFor(() => s!.collector.seen.some((d) => d.record.jobId === 'after-huge'), 30_000);
  });

  it('applies and rejects a mixed backlog in order, and a job created afterwards runs on time', async () => {
    s = await Scenario.create('rejmixed', 1);
    const a = await s.startScheduler();
    await s.startWorker();
    rejected = await new Collector([s.rejectedTopic], false).start();
    const c = await contracts();
    a.signal('SIGSTOP');
    // 2,100 records on the one partition: per job a create, a bad record, a reschedule of the
    // job, and for every other job a cancel after it; 2 KB of junk in each bad record.
    const far = Date.now() + 3_600_000;
    const jobs = Array.from({ length: 600 }, (_, i) => `mx-${i}`);
    const records: { key: string; value: Buffer }[] = [];
    const badOffsets: number[] = [];
    for (const [i, id] of jobs.entries()) {
      records.push({ key: id, value: c.encodeCommand(createJob(id, s.queue, far)) });
      badOffsets.push(records.length);
      records.push({ key: id, value: randomBytes(2_000) });
      records.push({ key: id, value: c.encodeCommand(rescheduleJob(id, far + 60_000 + i)) });
      if (i % 2 === 0) records.push({ key: id, value: c.encodeCommand(cancelJob(id)) });
    }
    for (let i = 0; i < records.length; i += 500) await s.producer.sendRaw(records.slice(i, i + 500));
    a.signal('SIGCONT');
    await until('every bad record rejected', 60_000, async () => rejected!.raw.length >= jobs.length);
    await until('lag 0', 30_000, async () => (await lag(s!)) === 0);
    const decoded: CommandRejected[] = await Promise.all(rejected.raw.map((m) => c.decodeRejected(m.value)));
    // Rejected in offset order, exactly the bad ones.
    expect(decoded.map((d) => Number(d.sourceOffset))).toEqual(badOffsets);
    // Applied in order: each job moved by its reschedule (version 2), every other one cancelled after.
    const { rows } = await s.db.pool.query<{ job_id: string; state: string; version: number; due: string }>(
      `SELECT job_id, state, version, (extract(epoch from due_at) * 1000)::bigint AS due FROM job WHERE job_id LIKE 'mx-%'`,
    );
    const byId = new Map(rows.map((r) => [r.job_id, r]));
    const wrong = jobs.filter((id, i) => {
      const r = byId.get(id);
      if (!r) return true;
      if (i % 2 === 0) return r.state !== 'CANCELLED';
      return r.state !== 'SCHEDULED' || r.version !== 2 || Number(r.due) !== far + 60_000 + i;
    });
    expect(wrong).toEqual([]);
    expect(await trouble(a)).toEqual({ tooLarge: 0, sequence: 0, restarts: 0 });
    // A normal job created afterwards runs on time.
    const due = Date.now() + 2_000;
    await s.producer.send([createJob('mx-after', s.queue, due)]);
    await s.collector.waitFor(() => s!.collector.seen.some((d) => d.record.jobId === 'mx-after'), 30_000);
    const d = s.collector.seen.find((x) => x.record.jobId === 'mx-after')!;
    expect(d.record.claimedAtMs).toBeGreaterThanOrEqual(due);
    await s.explained(() =>
      until('mx-after executed', 30_000, async () => (await s!.executions('mx-after')).length > 0),
    );
    console.log(
      `mixed backlog: ${records.length} records (${jobs.length} rejected in order, the rest applied in order); ` +
        `the job created afterwards claimed ${d.record.claimedAtMs - due} ms after its due time`,
    );
  });
  it('a request the broker refuses (its limit lowered under a running scheduler) is split from a new producer', async () => {
    s = await Scenario.create('rejsplit', 1);
    const a = await s.startScheduler();
    rejected = await new Collector([s.rejectedTopic], false).start();
    await s.producer.sendRaw([{ key: 'first', value: randomBytes(2_000) }]);
    await until('the first rejection', 30_000, async () => rejected!.raw.length >= 1);
    // The scheduler's producer knows the topic's limit (1 MB); lower it to 50 KB behind its back.
    const k = new Kafka({ brokers: ['127.0.0.1:9092'], logLevel: logLevel.NOTHING });
    const admin = k.admin();
    await admin.connect();
    try {
      await admin.alterConfigs({
        validateOnly: false,
        resources: [
          {
            type: ConfigResourceTypes.TOPIC,
            name: s.rejectedTopic,
            configEntries: [{ name: 'max.message.bytes', value: '50000' }],
          },
        ],
      });
    } finally {
      await admin.disconnect();
    }
    a.signal('SIGSTOP');
    await s.producer.sendRaw(Array.from({ length: 100 }, () => ({ key: 'same', value: randomBytes(2_000) })));
    a.signal('SIGCONT');
    await until('101 rejections', 60_000, async () => rejected!.raw.length >= 101);
    await until('lag 0', 30_000, async () => (await lag(s!)) === 0);
    const splits = await a.metric('sched_producer_recoveries_total', { kind: 'split' });
    expect(splits).toBeGreaterThan(0);
    expect(a.output()).toContain('replacing the idempotent producer');
    // Later rejections go out under the new limit, from the new producer, with no sequence error.
    await s.producer.sendRaw(Array.from({ length: 100 }, () => ({ key: 'same', value: randomBytes(2_000) })));
    await until('201 rejections', 60_000, async () => rejected!.raw.length >= 201);
    const t = await trouble(a);
    expect({ sequence: t.sequence, restarts: t.restarts }).toEqual({ sequence: 0, restarts: 0 });
    expect(await a.metric('sched_producer_recoveries_total', { kind: 'split' })).toBe(splits);
    console.log(
      `rejection topic limit lowered to 50 KB: ${splits} refused requests split from a new producer, 0 lost`,
    );
  });
  it('rejects a hostile stream of 100,000 records of up to 2 KB and keeps every partition moving', async () => {
    s = await Scenario.create('rejflood', 4);
    const a = await s.startScheduler();
    await s.startWorker();
    rejected = await new Collector([s.rejectedTopic], false).start();
    const n = 100_000;
    const t0 = Date.now();
    for (let i = 0; i < n; i += 5_000)
      await s.producer.sendRaw(
        Array.from({ length: 5_000 }, (_, j) => ({
          key: (i + j) % 3 === 0 ? 'hot' : `k-${i + j}`,
          value: randomBytes(Math.floor(Math.random() * 2_001)),
        })),
      );
    const produced = Date.now() - t0;
    await until(`${n} rejections`, 240_000, async () => rejected!.raw.length >= n);
    await until('lag 0', 30_000, async () => (await lag(s!)) === 0);
    const drained = Date.now() - t0;
    expect(await trouble(a)).toEqual({ tooLarge: 0, sequence: 0, restarts: 0 });
    const due = Date.now() + 2_000;
    await s.producer.send([createJob('flood-after', s.queue, due)]);
    await s.collector.waitFor(() => s!.collector.seen.some((d) => d.record.jobId === 'flood-after'), 30_000);
    const d = s.collector.seen.find((x) => x.record.jobId === 'flood-after')!;
    expect(d.record.claimedAtMs).toBeGreaterThanOrEqual(due);
    console.log(
      `hostile flood: ${n} records (a third on one key) produced in ${produced} ms, all rejected and lag 0 ` +
        `${drained} ms after the first; a job created afterwards claimed ${d.record.claimedAtMs - due} ms after its due time`,
    );
  });
});
