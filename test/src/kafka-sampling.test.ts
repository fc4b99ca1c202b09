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
      const batches: { first: number; last: number; count: number; atMs: number }[] = [];
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
              atMs: Date.now(),
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
      const [first, second] = batches;
      // It went on from the end the first fetch saw (10,000), not from after its own batch (500).
      expect(second!.first).toBe(10_000);
      expect(second!.count).toBe(PER_SEND);
      expect(second!.atMs - first!.atMs).toBeGreaterThanOrEqual(EVERY_MS - 50);
      await sleep(EVERY_MS + 1_500);
      expect(batches.reduce((n, b) => n + b.count, 0)).toBeLessThanOrEqual(3 * PER_SEND);
    } finally {
      await consumer?.stop();
      consumer = undefined;
      await producer.disconnect();
    }
  }, 90_000);
});
