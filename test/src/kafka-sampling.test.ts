import { afterAll, describe, expect, it } from 'vitest';
import type { GroupConsumer } from '@sched/kafka';
import { uniqueName } from './support/isolation.js';
import { ensureTopics, kafka, sleep, until } from './support/kafka.js';

// sampleEveryMs (the scheduler's dispatch observer): after a batch the consumer skips to the
// partition's end and leaves it alone for the interval, so what it skipped is never delivered.
describe('Kafka port: a sampling consumer on the real broker', () => {
  const port = kafka();
  let consumer: GroupConsumer | undefined;
  afterAll(async () => {
    await consumer?.stop().catch(() => undefined);
  });

  it('reads one record batch, skips to the end, and samples again only after the interval', async () => {
    const topic = uniqueName('sampling').replace(/_/g, '-');
    await ensureTopics([{ topic, partitions: 1 }]);
    const producer = await port.producer();
    const EVERY_MS = 2_000;
    const PER_SEND = 500;
    try {
      // Each send is a produce request of its own: a record batch of PER_SEND records.
      const sendBatches = async (from: number, sends: number) => {
        for (let k = 0; k < sends; k++)
          await producer.send(
            topic,
            Array.from({ length: PER_SEND }, (_, i) => ({
              key: 'k',
              value: Buffer.from(String(from + k * PER_SEND + i)),
            })),
          );
      };
      await sendBatches(0, 20); // offsets 0..9,999
      const batches: { first: number; last: number; count: number }[] = [];
      consumer = port.groupConsumer(
        {
          groupId: uniqueName('sampling-group'),
          topics: [topic],
          fromBeginning: true,
          maxWaitTimeMs: 200,
          maxBytesPerPartition: 1_024,
          sampleEveryMs: EVERY_MS,
        },
        {
          onBatch: async (b) => {
            batches.push({
              first: Number(b.messages[0]!.offset),
              last: Number(b.messages[b.messages.length - 1]!.offset),
              count: b.messages.length,
            });
          },
        },
      );
      await consumer.start();
      await until('the first sample', 30_000, async () => batches.length > 0);
      await sleep(EVERY_MS + 1_500);
      // One record batch from the start (the broker sends at least one whole batch), then nothing:
      // the rest of the 10,000 was skipped, not read.
      expect(batches.map((b) => [b.first, b.count])).toEqual([[0, PER_SEND]]);

      await sendBatches(10_000, 4); // offsets 10,000..11,999
      await until('a sample of the new records', 30_000, async () => batches.length > 1);
      const second = batches[1];
      // It went on from the end the first fetch saw (10,000), not from after its own batch (500).
      expect(second!.first).toBe(10_000);
      expect(second!.count).toBe(PER_SEND);
      await sleep(EVERY_MS + 1_500);
      expect(batches.reduce((n, b) => n + b.count, 0)).toBeLessThanOrEqual(3 * PER_SEND);
    } finally {
      await consumer?.stop();
      consumer = undefined;
      await producer.disconnect();
    }
  }, 90_000);

  it('samples a partition no more often than the interval while records keep coming', async () => {
    const topic = uniqueName('sampling-pace').replace(/_/g, '-');
    await ensureTopics([{ topic, partitions: 1 }]);
    const producer = await port.producer();
    const EVERY_MS = 1_500;
    const samples: number[] = [];
    consumer = port.groupConsumer(
      {
        groupId: uniqueName('sampling-pace-group'),
        topics: [topic],
        fromBeginning: false,
        maxWaitTimeMs: 100,
        maxBytesPerPartition: 1_024,
        sampleEveryMs: EVERY_MS,
      },
      { onBatch: async () => void samples.push(Date.now()) },
    );
    try {
      await consumer.start();
      // A record every 50 ms for 7.5 s: without the pause, a sample every fetch (~20 a second).
      const t0 = Date.now();
      for (let i = 0; Date.now() - t0 < 7_500; i++) {
        await producer.send(topic, [{ key: 'k', value: Buffer.from(String(i)) }]);
        await sleep(50);
      }
      expect(samples.length).toBeGreaterThanOrEqual(2);
      expect(samples.length).toBeLessThanOrEqual(Math.ceil(7_500 / EVERY_MS) + 1);
      for (let i = 1; i < samples.length; i++)
        expect(samples[i]! - samples[i - 1]!).toBeGreaterThanOrEqual(EVERY_MS - 50);
    } finally {
      await consumer.stop();
      consumer = undefined;
      await producer.disconnect();
    }
  }, 60_000);

  it('a crash while a partition is paused: the process lives on and sampling resumes after the restart', async () => {
    const topic = uniqueName('sampling-crash').replace(/_/g, '-');
    await ensureTopics([{ topic, partitions: 2 }]);
    const producer = await port.producer();
    const send = (partition: number, n: number) =>
      producer.send(
        topic,
        Array.from({ length: n }, (_, i) => ({ key: 'k', value: Buffer.from(String(i)), partition })),
      );
    // The resume timer of the first batch's partition falls due before the port restarts the
    // crashed consumer (0.5 s): kafkajs refuses a resume then, and an uncaught throw would end
    // this process (vitest reports it as an unhandled error).
    const EVERY_MS = 300;
    let calls = 0;
    let afterRestart = 0;
    const sampler: GroupConsumer = port.groupConsumer(
      {
        groupId: uniqueName('sampling-crash-group'),
        topics: [topic],
        fromBeginning: true,
        maxWaitTimeMs: 50,
        maxBytesPerPartition: 1_024,
        sampleEveryMs: EVERY_MS,
      },
      {
        onBatch: async () => {
          calls++;
          if (calls === 2) throw new TypeError('a bug in a handler, the other partition paused');
          if (sampler.restarts() > 0) afterRestart++;
        },
      },
    );
    consumer = sampler;
    try {
      await send(0, 5);
      await send(1, 5);
      await sampler.start();
      await until('the consumer restarted', 30_000, async () => sampler.restarts() === 1);
      await sleep(EVERY_MS * 3);
      await send(0, 5);
      await send(1, 5);
      await until('samples after the restart', 30_000, async () => afterRestart >= 2);
      expect(sampler.restarts()).toBe(1);
    } finally {
      await sampler.stop();
      consumer = undefined;
      await producer.disconnect();
    }
  }, 60_000);
});
