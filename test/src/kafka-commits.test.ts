import { afterAll, describe, expect, it } from 'vitest';
import type { GroupConsumer, GroupConsumerOptions } from '@sched/kafka';
import { uniqueName } from './support/isolation.js';
import { ensureTopics, kafka, sleep, until } from './support/kafka.js';

// commitIntervalMs: offsets are recorded per batch and committed together on a timer and on stop,
// never before the batch's handler finished; nothing handled is left uncommitted after stop().
describe('Kafka port: coalesced offset commits on the real broker', () => {
  const port = kafka();
  let consumer: GroupConsumer | undefined;
  afterAll(async () => {
    await consumer?.stop().catch(() => undefined);
  });
  /** A consumer that records every message's value, then takes `holdMs` more per batch. */
  const recording = (options: GroupConsumerOptions, record: (value: string) => unknown, holdMs = 0) =>
    port.groupConsumer(
      { maxWaitTimeMs: 50, ...options },
      {
        onBatch: async (batch) => {
          for (const m of batch.messages) record(m.value!.toString());
          if (holdMs > 0) await sleep(holdMs);
        },
      },
    );

  it('commits every handled offset within the interval, and on stop', async () => {
    const topic = uniqueName('commits').replace(/_/g, '-');
    const groupId = uniqueName('commits-group');
    await ensureTopics([{ topic, partitions: 3 }]);
    const producer = await port.producer();
    const admin = await port.admin();
    try {
      const send = (from: number, n: number) =>
        producer.send(
          topic,
          Array.from({ length: n }, (_, i) => ({
            key: `k-${from + i}`,
            value: Buffer.from(String(from + i)),
          })),
        );
      await send(0, 60);
      const handled = new Set<string>();
      consumer = recording(
        { groupId, topics: [topic], commitIntervalMs: 300, partitionsConsumedConcurrently: 3 },
        (value) => handled.add(value),
      );
      await consumer.start();
      await until('60 handled', 30_000, async () => handled.size === 60);
      // The timer commits what was handled: the group's lag drains to 0 without a stop.
      await until(
        'lag 0 after the interval',
        10_000,
        async () => (await admin.groupLag(groupId, topic)) === 0,
      );

      await send(60, 30);
      await until('90 handled', 30_000, async () => handled.size === 90);
      await consumer.stop();
      consumer = undefined;
      // Stopping flushed the pending offsets before leaving the group.
      expect(await admin.groupLag(groupId, topic)).toBe(0);
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  });

  it("reads the broker's group session range: the stack lets workers ask for 1 s and up", async () => {
    const admin = await port.admin();
    try {
      expect(await admin.sessionTimeoutRange()).toEqual({ minMs: 1_000, maxMs: 1_800_000 });
    } finally {
      await admin.disconnect();
    }
  });

  it('a batch handled for longer than the group session keeps the membership: no redelivery', async () => {
    const topic = uniqueName('long-batch').replace(/_/g, '-');
    await ensureTopics([{ topic, partitions: 1 }]);
    const producer = await port.producer();
    const seen: string[] = [];
    // Each batch takes three sessions: a client that did not heartbeat while a batch is handled
    // would be dropped from the group, its offset commit refused and the batch delivered again
    // (kafkajs alone does not: it heartbeats between batches, and then stops the consumer for good).
    const long = recording(
      {
        groupId: uniqueName('long-batch-group'),
        topics: [topic],
        sessionTimeoutMs: 2_000,
        heartbeatIntervalMs: 500,
      },
      (value) => seen.push(value),
      6_000,
    );
    try {
      await long.start();
      await producer.send(topic, [{ key: 'k', value: Buffer.from('only') }]);
      await until('the batch handled', 30_000, async () => seen.length > 0);
      await sleep(9_000);
      expect(seen).toEqual(['only']);
      // Still a member, not a consumer kafkajs stopped (and we restarted): the next record is handled once.
      expect(long.restarts()).toBe(0);
      await producer.send(topic, [{ key: 'k', value: Buffer.from('next') }]);
      await until('the next batch handled', 30_000, async () => seen.length > 1);
      await sleep(7_000);
      expect(seen).toEqual(['only', 'next']);
      expect(long.restarts()).toBe(0);
    } finally {
      await long.stop();
      await producer.disconnect();
    }
  }, 90_000);
});
