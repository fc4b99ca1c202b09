import { afterAll, describe, expect, it } from 'vitest';
import type { GroupConsumer } from '@sched/kafka';
import { uniqueName } from './support/isolation.js';
import { ensureTopics, kafka, until } from './support/kafka.js';

// kafkajs stops a consumer for good when an error it does not retry reaches it (a TypeError from a
// batch handler, for one); the port starts it again, and the batch that failed is delivered again.
describe('Kafka port: a consumer stopped by an error kafkajs does not retry is restarted', () => {
  const port = kafka();
  let consumer: GroupConsumer | undefined;
  afterAll(async () => {
    await consumer?.stop().catch(() => undefined);
  });

  it('a handler TypeError: restarted, the batch re-delivered, then committed', async () => {
    const topic = uniqueName('restart').replace(/_/g, '-');
    const groupId = uniqueName('restart-group');
    await ensureTopics([{ topic, partitions: 1 }]);
    const producer = await port.producer();
    const admin = await port.admin();
    try {
      await producer.send(
        topic,
        Array.from({ length: 10 }, (_, i) => ({ key: `k-${i}`, value: Buffer.from(String(i)) })),
      );
      const deliveries: string[] = [];
      let thrown = 0;
      consumer = port.groupConsumer(
        { groupId, topics: [topic], maxWaitTimeMs: 50, sessionTimeoutMs: 6_000, heartbeatIntervalMs: 500 },
        {
          onBatch: async (batch) => {
            for (const m of batch.messages) deliveries.push(m.value!.toString());
            if (thrown === 0) {
              thrown++;
              // Not retried by kafkajs: it disconnects the consumer and does not start it again.
              throw new TypeError('a bug in a handler');
            }
          },
        },
      );
      await consumer.start();
      await until(
        'all 10 handled after the restart',
        60_000,
        async () => new Set(deliveries).size === 10 && thrown === 1 && deliveries.length > 10,
      );
      expect(consumer.restarts()).toBe(1);
      // Every message was delivered again after the failed batch (nothing was committed for it) ...
      for (let i = 0; i < 10; i++)
        expect(deliveries.filter((d) => d === String(i)).length).toBeGreaterThanOrEqual(1);
      expect(deliveries.indexOf('0')).toBe(0);
      expect(deliveries.lastIndexOf('0')).toBeGreaterThan(0);
      // ... and the second delivery was committed: the group has no lag.
      await until('lag 0', 20_000, async () => (await admin.groupLag(groupId, topic)) === 0);
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});
