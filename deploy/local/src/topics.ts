import { Kafka, logLevel, type Admin } from 'kafkajs';

/** A topic `up` creates, with its partition count (replication factor 1: one broker). */
export interface TopicSpec {
  name: string;
  partitions: number;
}

/** The topics every part of the system expects; docker-compose's init step creates the same. */
export const STACK_TOPICS: readonly TopicSpec[] = Object.freeze([
  { name: 'sched.commands', partitions: 12 },
  { name: 'sched.commands.rejected', partitions: 3 },
  { name: 'sched.events', partitions: 6 },
  { name: 'sched.dispatch.default', partitions: 6 },
]);

/** Debezium routes `aggregatetype = dispatch.<queue>` here; unknown queues are auto-created with this many partitions. */
export const DISPATCH_TOPIC_PREFIX = 'sched.dispatch.';
export const DISPATCH_PARTITIONS = 6;

export const dispatchTopic = (queue: string): TopicSpec => ({
  name: `${DISPATCH_TOPIC_PREFIX}${queue}`,
  partitions: DISPATCH_PARTITIONS,
});

/** A short-lived, quiet kafkajs admin for the stack's own checks; always disconnected afterwards. */
export async function withAdmin<T>(
  brokers: string[],
  work: (admin: Admin) => Promise<T>,
  timeoutMs = 3000,
): Promise<T> {
  const kafka = new Kafka({
    clientId: 'sched-local-stack',
    brokers,
    connectionTimeout: Math.min(timeoutMs, 3000),
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    return await work(admin);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

export interface TopicsResult {
  created: string[];
  grown: string[];
  /** Existing topics with more partitions than asked (left alone). */
  larger: string[];
}

/**
 * Creates the missing topics (replication factor 1) and grows those with fewer partitions than
 * asked. Idempotent. Waits for leaders, so producers can use the topics at once.
 */
export async function ensureTopics(brokers: string[], topics: readonly TopicSpec[]): Promise<TopicsResult> {
  return withAdmin(
    brokers,
    async (admin) => {
      const existing = new Set(await admin.listTopics());
      const missing = topics.filter((t) => !existing.has(t.name));
      const result: TopicsResult = { created: [], grown: [], larger: [] };
      if (missing.length > 0) {
        await admin.createTopics({
          topics: missing.map((t) => ({ topic: t.name, numPartitions: t.partitions, replicationFactor: 1 })),
          waitForLeaders: true,
        });
        result.created = missing.map((t) => t.name);
      }
      const present = topics.filter((t) => existing.has(t.name));
      if (present.length > 0) {
        const meta = await admin.fetchTopicMetadata({ topics: present.map((t) => t.name) });
        const grow: { topic: string; count: number }[] = [];
        for (const t of present) {
          const have = meta.topics.find((m) => m.name === t.name)?.partitions.length ?? 0;
          if (have < t.partitions) grow.push({ topic: t.name, count: t.partitions });
          else if (have > t.partitions) result.larger.push(`${t.name} (${have} partitions)`);
        }
        if (grow.length > 0) {
          await admin.createPartitions({ topicPartitions: grow });
          result.grown = grow.map((g) => g.topic);
        }
      }
      return result;
    },
    30_000,
  );
}
