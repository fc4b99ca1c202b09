import type pg from 'pg';
import type { GroupConsumer, KafkaPort } from '@sched/kafka';
import type { Logger } from '@sched/logging';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/** Records of one fetched batch whose lag is observed (evenly spread, the last one included). */
export const SAMPLES_PER_BATCH = 32;

/**
 * Measures outbox publication lag: claim (outbox insert, database time) → the dispatch record
 * on its topic (the record's timestamp, set when the relay produced it). The metric most likely to
 * catch a stuck or crashed relay. Consumes the dispatch topics of the queues known at start, in a
 * group of its own, from the latest offset. Because the lag is read from the record, not from when
 * the observer fetched it, the observer fetches lazily (large minBytes, long wait): a few fetches
 * a second instead of one per dispatched batch, and decodes at most SAMPLES_PER_BATCH records of
 * each fetched batch (the histogram is of a sample; a stuck relay shows in every one of them), so
 * watching costs the scheduler little.
 */
export class DispatchObserver {
  private consumer: GroupConsumer | null = null;

  constructor(
    private readonly kafka: KafkaPort,
    private readonly pool: pg.Pool,
    private readonly claimedAtOf: (value: Buffer) => Promise<number>,
    private readonly metrics: SchedulerMetrics,
    private readonly log: Logger,
    private readonly groupId: string,
  ) {}

  async start(): Promise<void> {
    const { rows } = await this.pool.query<{ queue: string }>('SELECT queue FROM queue');
    const admin = await this.kafka.admin();
    const topics: string[] = [];
    try {
      for (const r of rows) {
        const t = `sched.dispatch.${r.queue}`;
        if ((await admin.partitionCount(t).catch(() => 0)) > 0) topics.push(t);
      }
    } finally {
      await admin.disconnect();
    }
    if (topics.length === 0) return;
    this.consumer = this.kafka.groupConsumer(
      {
        groupId: this.groupId,
        topics,
        fromBeginning: false,
        maxWaitTimeMs: 1_000,
        minBytes: 256 * 1024,
        // A gauge, not a ledger: no commit round trip per batch (it starts from the latest offset anyway).
        commitIntervalMs: 5_000,
        sessionTimeoutMs: 30_000,
      },
      {
        onBatch: async (batch) => {
          // A sample of each batch, evenly spread and always its last record: decoding every
          // dispatch record cost the scheduler ~15 % of its CPU in a 100,000-job burst.
          const all = batch.messages;
          const step = Math.max(1, Math.ceil(all.length / SAMPLES_PER_BATCH));
          for (let i = all.length - 1; i >= 0; i -= step) {
            const m = all[i]!;
            if (!m.value) continue;
            try {
              this.metrics.outboxPublicationLag.observe(
                Math.max(0, m.timestampMs - (await this.claimedAtOf(m.value))) / 1000,
              );
            } catch {
              // Not ours to judge: workers count undecodable records.
            }
          }
        },
      },
    );
    await this.consumer.start();
    this.log.info({ topics }, 'observing dispatch topics for publication lag');
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}
