import type pg from 'pg';
import type { GroupConsumer, KafkaPort } from '@sched/kafka';
import type { Logger } from '@sched/logging';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/** Records of one sampled batch whose lag is observed (evenly spread, the last one included). */
export const SAMPLES_PER_BATCH = 32;

/** Bytes a sample fetch asks of each partition (a larger first record batch still comes whole). */
const SAMPLE_FETCH_BYTES = 16 * 1024;

/**
 * Measures outbox publication lag: claim (database time) → the dispatch record on its topic (the
 * record's timestamp, set when the relay produced it). The metric most likely to catch a slow or
 * crashed relay. Consumes the dispatch topics of the queues known at start, in a group of its own,
 * as a sampling consumer (`sampleEveryMs`): about one record batch of each partition every
 * `everyMs`, then it skips to the partition's end, so the records in between are never fetched or
 * decoded, and of a sampled batch it reads at most SAMPLES_PER_BATCH records. The histogram is of a
 * sample; a slow relay shows in every part of it. Because the lag is read from the record, not from
 * when the observer fetched it, sampling late does not change it. Reading every dispatch record
 * instead (even decoding only a sample of each) cost the scheduler half its CPU in a 100,000-job
 * burst, and its fetches, decoded on the scheduler's event loop, held up the firing rounds.
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
    private readonly everyMs: number,
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
        maxBytesPerPartition: SAMPLE_FETCH_BYTES,
        sampleEveryMs: this.everyMs,
        sessionTimeoutMs: 30_000,
      },
      {
        onBatch: async (batch) => {
          // Of the sampled batch, a few records evenly spread and always its last.
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
