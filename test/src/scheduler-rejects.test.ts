import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandRejected } from '@sched/contracts';
import { Collector, contracts, createJob, upsertSchedule } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// Bad input gets a clear answer and loses nothing: each bad command lands on the rejected topic
// with its original bytes, partition, offset and a machine-readable reason; the partition moves on.
describe('scheduler: bad input is rejected with a reason, nothing lost', () => {
  let s: Scenario;
  let rejected: Collector;
  const decoded: CommandRejected[] = [];

  beforeAll(async () => {
    s = await Scenario.create('rej', 1);
    await s.startScheduler({ SCHED_MAX_PAYLOAD_BYTES: '1024' });
    rejected = await new Collector([s.rejectedTopic], false).start();
  });
  afterAll(async () => {
    await rejected?.stop();
    await s?.close();
  });

  it('rejects each kind of bad command and keeps the partition moving', async () => {
    const c = await contracts();
    const now = Date.now();
    // A writer schema that is a different record (missing every required field of Command).
    const otherId = await c.registerSchema(`t-${s.db.schema}-other`, {
      type: 'record',
      name: 'Command',
      namespace: 'io.sched.v1',
      fields: [{ name: 'unrelated', type: 'string' }],
    });
    const framed = (id: number, body: Buffer) =>
      Buffer.concat([
        Buffer.from([0, (id >>> 24) & 255, (id >>> 16) & 255, (id >>> 8) & 255, id & 255]),
        body,
      ]);
    const cases: { key: string; value: Buffer; reason: string }[] = [
      { key: 'bad-1', value: Buffer.from('definitely not avro'), reason: 'UNDECODABLE' },
      { key: 'bad-2', value: framed(987_654_321, Buffer.from([2, 4, 6])), reason: 'UNKNOWN_SCHEMA_ID' },
      { key: 'bad-3', value: framed(otherId, Buffer.from([6, 97, 98, 99])), reason: 'INCOMPATIBLE_SCHEMA' },
      {
        key: 'bad-4',
        value: c.encodeCommand(createJob('bad-4', 'no-such-queue', now + 1000)),
        reason: 'UNKNOWN_QUEUE',
      },
      {
        key: 'bad-5',
        value: c.encodeCommand({ ...createJob('bad-5', s.queue, now + 1000), tenantId: 'nobody' }),
        reason: 'UNKNOWN_TENANT',
      },
      {
        key: 'bad-6',
        value: c.encodeCommand(createJob('bad-6', s.queue, Date.UTC(3000, 0, 1))),
        reason: 'DUE_AT_OUT_OF_RANGE',
      },
      {
        key: 'bad-7',
        value: c.encodeCommand(createJob('bad-7', s.queue, 1_700_000_000)),
        reason: 'DUE_AT_OUT_OF_RANGE',
      },
      {
        key: 'bad-8',
        value: c.encodeCommand(createJob('bad-8', s.queue, now + 1000, { payload: Buffer.alloc(2048, 1) })),
        reason: 'PAYLOAD_TOO_LARGE',
      },
      {
        key: 'bad-9',
        value: c.encodeCommand(createJob('bad-9', s.queue, now + 1000, { priority: 50_000 })),
        reason: 'INVALID_FIELD',
      },
      {
        key: 'bad-10',
        value: c.encodeCommand(createJob('bad-10', s.queue, now + 1000, { maxAttempts: 0 })),
        reason: 'INVALID_FIELD',
      },
      {
        key: 'not-the-job-id',
        value: c.encodeCommand(createJob('bad-11', s.queue, now + 1000)),
        reason: 'KEY_MISMATCH',
      },
      {
        key: 'sched-1',
        value: c.encodeCommand(
          upsertSchedule('sched-1', s.queue, { intervalMs: 60_000, misfireFireAllCap: 0 }),
        ),
        reason: 'INVALID_FIELD',
      },
      {
        key: 'bad-12',
        value: c.encodeCommand(createJob('bad-12', s.queue, now + 1000, { businessKey: 'k'.repeat(501) })),
        reason: 'INVALID_FIELD',
      },
    ];
    await s.producer.sendRaw(cases.map((x) => ({ key: x.key, value: x.value })));
    // A good command behind them all on the same (single) partition.
    await s.producer.send([createJob('good-after-bad', s.queue, now + 500)]);

    await s.collector.waitFor(
      () => s.collector.seen.some((d) => d.record.jobId === 'good-after-bad'),
      30_000,
      'the good job',
    );
    await rejected.waitFor(() => rejected.raw.length >= cases.length, 60_000, 'rejected records');
    for (const m of rejected.raw) decoded.push(await c.decodeRejected(m.value!));

    expect(decoded.map((r) => r.reasonCode)).toEqual(cases.map((x) => x.reason));
    decoded.forEach((r, i) => {
      expect(r.originalValue).toEqual(cases[i]!.value);
      expect(r.originalKey?.toString()).toBe(cases[i]!.key);
      expect(r.sourceTopic).toBe(s.commandsTopic);
      expect(r.sourcePartition).toBe(0);
      expect(Number(r.sourceOffset)).toBe(i);
      expect(r.message.length).toBeGreaterThan(5);
    });
    const sched = s.schedulers[0]!;
    expect(await sched.metric('sched_commands_rejected_total')).toBe(cases.length);
    expect(await sched.metric('sched_commands_rejected_total', { reason: 'DUE_AT_OUT_OF_RANGE' })).toBe(2);
    const { rows } = await s.db.pool.query<{ job_id: string }>('SELECT job_id FROM job');
    expect(rows.map((r) => r.job_id)).toEqual(['good-after-bad']);
  });
});
