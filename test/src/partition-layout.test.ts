import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpoints } from './support/isolation.js';
import { Scenario } from './support/scenario.js';

// Partitions added to the command topic would send commands for existing jobs to partitions whose
// owners do not hold them: their cancels and reschedules would be lost without a word. The
// scheduler records the count at its first start and refuses to start when it has changed.

describe('the command topic partition count the jobs were placed with', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await Scenario.create('layout', 4);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('is recorded at the first start; a scheduler refuses to start once partitions were added', async () => {
    const a = await s.startScheduler();
    const { rows } = await s.db.pool.query('SELECT topic, partitions FROM command_topic_layout');
    expect(rows).toEqual([{ topic: s.commandsTopic, partitions: 4 }]);
    await a.stop();
    const admin = new Kafka({ brokers: endpoints().kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      await admin.createPartitions({ topicPartitions: [{ topic: s.commandsTopic, count: 6 }] });
    } finally {
      await admin.disconnect();
    }
    const refused = await s.startScheduler().then(
      () => null,
      (err: Error) => err.message,
    );
    expect(refused).toMatch(/exited with 1 before ready/);
    expect(refused).toContain('SCHED_E_PARTITIONS_CHANGED');
    expect(refused).toContain('has 6 partitions, but its jobs were placed for 4');
  });
});
