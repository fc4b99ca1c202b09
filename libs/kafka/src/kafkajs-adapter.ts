import { Kafka, logLevel, type Consumer, type EachBatchPayload, type IHeaders, type LogEntry } from 'kafkajs';
import kafkajsModule from 'kafkajs';
import type { Logger } from '@sched/logging';
import type {
  GroupConsumer,
  GroupConsumerHandlers,
  GroupConsumerOptions,
  HeaderValue,
  InboundMessage,
  KafkaPort,
  TopicSpec,
} from './port.js';
import { AssignmentTracker } from './assignment-tracker.js';
import { KafkajsProducer } from './kafkajs-producer.js';
import { stickyAssigner } from './kafkajs-sticky-assigner.js';

export { kafkaErrorType } from './kafkajs-producer.js';

export interface KafkajsOptions {
  clientId: string;
  brokers: string[];
  logger: Logger;
  connectionTimeoutMs?: number;
}

/** The KafkaPort over kafkajs 2.x. */
export function kafkajsPort(options: KafkajsOptions): KafkaPort {
  const log = options.logger;
  const kafka = new Kafka({
    clientId: options.clientId,
    brokers: options.brokers,
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    retry: { initialRetryTime: 100, retries: 8 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        const line = { kafkajs: true, ...rest };
        if (level <= logLevel.ERROR) log.error(line, message);
        else if (level === logLevel.WARN) log.warn(line, message);
        else log.debug(line, message);
      },
  });

  return {
    async producer(opts = {}) {
      const producer = new KafkajsProducer(
        kafka,
        { idempotent: opts.idempotent ?? true, lingerMs: opts.lingerMs ?? 0, onRecovery: opts.onRecovery },
        log,
      );
      await producer.connect();
      return producer;
    },
    groupConsumer(opts, handlers) {
      return new KafkajsGroupConsumer(kafka, opts, handlers, log);
    },
    async admin() {
      const admin = kafka.admin();
      await admin.connect();
      return {
        async ensureTopics(topics: TopicSpec[]) {
          const existing = new Set(await admin.listTopics());
          const missing = topics.filter((t) => !existing.has(t.topic));
          if (missing.length === 0) return;
          await admin.createTopics({
            waitForLeaders: true,
            topics: missing.map((t) => ({
              topic: t.topic,
              numPartitions: t.partitions,
              replicationFactor: 1,
              configEntries: Object.entries(t.config ?? {}).map(([name, value]) => ({ name, value })),
            })),
          });
        },
        async partitionCount(topic: string) {
          const meta = await admin.fetchTopicMetadata({ topics: [topic] });
          return meta.topics[0]?.partitions.length ?? 0;
        },
        async endOffsets(topic: string) {
          const ends = await admin.fetchTopicOffsets(topic);
          return new Map(ends.map((e) => [e.partition, Number(e.high)]));
        },
        async groupLag(groupId: string, topic: string) {
          const ends = await admin.fetchTopicOffsets(topic);
          const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
          const byPartition = new Map(
            committed[0]?.partitions.map((p) => [p.partition, Number(p.offset)]) ?? [],
          );
          let lag = 0;
          for (const e of ends) {
            const c = byPartition.get(e.partition) ?? -1;
            lag += Number(e.high) - Math.max(c, Number(e.low));
          }
          return lag;
        },
        async sessionTimeoutRange() {
          const names = ['group.min.session.timeout.ms', 'group.max.session.timeout.ms'];
          try {
            const { brokers } = await admin.describeCluster();
            const res = await admin.describeConfigs({
              includeSynonyms: false,
              resources: [
                {
                  // A default import: Node's ESM view of this CommonJS module lacks this export.
                  type: kafkajsModule.ConfigResourceTypes.BROKER,
                  name: String(brokers[0]!.nodeId),
                  configNames: names,
                },
              ],
            });
            const entries = res.resources[0]?.configEntries ?? [];
            const value = (name: string): number =>
              Number(entries.find((e) => e.configName === name)?.configValue);
            const minMs = value(names[0]!);
            const maxMs = value(names[1]!);
            return Number.isFinite(minMs) && Number.isFinite(maxMs) ? { minMs, maxMs } : undefined;
          } catch (err) {
            log.debug({ err }, 'could not read the broker group session timeout range');
            return undefined;
          }
        },
        async disconnect() {
          await admin.disconnect();
        },
      };
    },
  };
}

/**
 * Consumer-group membership over kafkajs. What the member owns and the calls to its handlers are
 * `AssignmentTracker`'s (kafkajs reports a new assignment through the GROUP_JOIN event without
 * awaiting listeners, so every batch first awaits the tracker's transitions); partitions are
 * assigned by our sticky assignor (`stickyAssign`), kafkajs's round robin as the fallback.
 */
class KafkajsGroupConsumer implements GroupConsumer {
  private readonly consumer: Consumer;
  private readonly tracker: AssignmentTracker;
  private retakeTimer: NodeJS.Timeout | undefined;
  private running = false;
  /** Offsets handled but not committed yet (commitIntervalMs > 0), by `topic/partition`. */
  private readonly pendingCommits = new Map<string, { topic: string; partition: number; offset: string }>();
  private commitTimer: NodeJS.Timeout | undefined;
  private commitInFlight: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;
  /** sampleEveryMs: the timers that resume paused partitions. */
  private readonly resumeTimers = new Set<NodeJS.Timeout>();
  private restartAttempts = 0;
  private restartCount = 0;
  private readonly heartbeatMs: number;

  constructor(
    kafka: Kafka,
    private readonly opts: GroupConsumerOptions,
    private readonly handlers: GroupConsumerHandlers,
    private readonly log: Logger,
  ) {
    this.heartbeatMs = opts.heartbeatIntervalMs ?? 3_000;
    this.tracker = new AssignmentTracker(handlers, log, {
      retakeAfterMs: opts.sessionTimeoutMs ?? 30_000,
      // Not committed for a partition handed away: its next owner re-delivers from the last commit.
      onDropped: (topic, p) => this.pendingCommits.delete(`${topic}/${p}`),
    });
    this.consumer = kafka.consumer({
      groupId: opts.groupId,
      sessionTimeout: opts.sessionTimeoutMs ?? 30_000,
      heartbeatInterval: this.heartbeatMs,
      rebalanceTimeout: opts.rebalanceTimeoutMs ?? 60_000,
      maxWaitTimeInMs: opts.maxWaitTimeMs ?? 100,
      minBytes: opts.minBytes ?? 1,
      maxBytesPerPartition: opts.maxBytesPerPartition ?? 4 * 1024 * 1024,
      allowAutoTopicCreation: false,
      retry: { retries: 10 },
      partitionAssigners: [
        stickyAssigner(() => this.tracker.claims()),
        kafkajsModule.PartitionAssigners.roundRobin,
      ],
    });
    const { GROUP_JOIN, REBALANCING, CRASH, STOP, HEARTBEAT } = this.consumer.events;
    this.consumer.on(HEARTBEAT, () => this.tracker.heartbeat());
    this.consumer.on(REBALANCING, () => {
      this.tracker.rebalancing = true;
    });
    this.consumer.on(GROUP_JOIN, (e) => {
      this.restartAttempts = 0;
      this.tracker.joined(e.payload.memberId, new Map(Object.entries(e.payload.memberAssignment)));
    });
    this.consumer.on(CRASH, (e) => {
      this.log.warn(
        { err: e.payload.error, restart: e.payload.restart },
        'consumer crashed; releasing partitions',
      );
      this.tracker.lost();
      this.clearResumeTimers();
      // kafkajs gives up for good on an error it deems not retriable (a TypeError from a handler or
      // from its own fetch path, say): the process would live on consuming nothing. Start it again.
      if (!e.payload.restart && this.running) this.restartLater(e.payload.error);
    });
    this.consumer.on(STOP, () => {
      this.tracker.lost();
      this.clearResumeTimers();
    });
  }

  assignment(): Map<string, number[]> {
    return this.tracker.assignment();
  }

  restarts(): number {
    return this.restartCount;
  }

  async start(): Promise<void> {
    this.running = true;
    if (this.handlers.holds) {
      this.retakeTimer = setInterval(() => this.running && this.tracker.retake(), this.heartbeatMs);
      this.retakeTimer.unref();
    }
    await this.consumer.connect();
    await this.consumer.subscribe({
      topics: this.opts.topics,
      fromBeginning: this.opts.fromBeginning ?? true,
    });
    await this.run();
  }

  private async run(): Promise<void> {
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.opts.partitionsConsumedConcurrently ?? 1,
      eachBatch: (payload) => this.handleBatch(payload),
    });
  }

  /**
   * Runs the consumer again after kafkajs stopped it for good: 0.5 s, then doubling to 30 s while
   * the attempts fail; a successful join resets the delay. kafkajs has disconnected it and keeps the
   * subscription, so connect + run rejoins the group and resumes from the committed offsets.
   */
  private restartLater(cause: unknown): void {
    const delayMs = Math.min(30_000, 500 * 2 ** this.restartAttempts++);
    this.log.error({ err: cause, delayMs }, 'consumer stopped by an error it does not retry; restarting it');
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      if (!this.running) return;
      this.restartCount++;
      this.consumer
        .connect()
        .then(() => this.run())
        .catch((err: unknown) => {
          if (this.running) this.restartLater(err);
        });
    }, delayMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.restartTimer);
    clearInterval(this.retakeTimer);
    this.clearResumeTimers();
    await this.flushCommits();
    await this.consumer.disconnect();
    await this.tracker.settled();
  }

  private async handleBatch(payload: EachBatchPayload): Promise<void> {
    await this.tracker.settled();
    const { batch } = payload;
    if (batch.messages.length === 0) return;
    const messages: InboundMessage[] = batch.messages.map((m) => ({
      topic: batch.topic,
      partition: batch.partition,
      offset: m.offset,
      key: m.key,
      value: m.value,
      headers: normaliseHeaders(m.headers),
      timestampMs: Number(m.timestamp),
    }));
    // kafkajs heartbeats only between batches: a handler that runs longer than the session would be
    // dropped from the group, its offset commit refused (UNKNOWN_MEMBER_ID, which kafkajs does not
    // retry) and the batch delivered again. So heartbeat on a timer while the handler runs (kafkajs
    // sends at most one per heartbeat interval); a refused one means a rebalance: finish quickly.
    const beat = setInterval(() => {
      payload.heartbeat().catch((err: unknown) => {
        // A refusal that means a rebalance (not a timeout, which kafkajs just retries).
        if (REBALANCE_ERRORS.has((err as { type?: string }).type ?? '')) this.tracker.rebalancing = true;
        this.log.debug({ err }, 'heartbeat during a batch refused');
      });
    }, this.heartbeatMs);
    try {
      await this.handlers.onBatch(
        { topic: batch.topic, partition: batch.partition, messages, highWatermark: batch.highWatermark },
        {
          heartbeat: () => payload.heartbeat(),
          isStale: () =>
            this.tracker.rebalancing || !this.running || payload.isStale() || !payload.isRunning(),
        },
      );
    } finally {
      clearInterval(beat);
    }
    const last = batch.messages[batch.messages.length - 1]!.offset;
    payload.resolveOffset(last);
    if ((this.opts.sampleEveryMs ?? 0) > 0) {
      this.skipAndPause(batch.topic, batch.partition, last, batch.highWatermark);
      return;
    }
    const next = { topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() };
    const interval = this.opts.commitIntervalMs ?? 0;
    if (interval <= 0) {
      await this.consumer.commitOffsets([next]);
      return;
    }
    this.pendingCommits.set(`${next.topic}/${next.partition}`, next);
    this.commitTimer ??= setTimeout(() => void this.flushCommits(), interval);
  }

  /**
   * sampleEveryMs: the next fetch of this partition starts at its end as the fetch saw it (what lies
   * between is never fetched, so never decoded), and not before the interval has passed.
   */
  private skipAndPause(topic: string, partition: number, last: string, highWatermark: string): void {
    if (BigInt(highWatermark) > BigInt(last) + 1n)
      this.consumer.seek({ topic, partition, offset: highWatermark });
    const tp = [{ topic, partitions: [partition] }];
    this.consumer.pause(tp);
    const t = setTimeout(() => {
      this.resumeTimers.delete(t);
      if (!this.running) return;
      try {
        this.consumer.resume(tp);
      } catch (err) {
        // kafkajs refuses while it has no running group (after a crash, before a restart): the
        // restarted consumer starts with nothing paused. A throw here would end the process.
        this.log.debug({ err, topic, partition }, 'sampled partition not resumed: consumer not running');
      }
    }, this.opts.sampleEveryMs);
    t.unref();
    this.resumeTimers.add(t);
  }

  /** A crashed or stopped consumer's group is gone, and with it what it had paused. */
  private clearResumeTimers(): void {
    for (const t of this.resumeTimers) clearTimeout(t);
    this.resumeTimers.clear();
  }

  /** Commits every recorded offset in one request; a failure is logged (the work is re-delivered). */
  private flushCommits(): Promise<void> {
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    const offsets = [...this.pendingCommits.values()];
    this.pendingCommits.clear();
    if (offsets.length === 0) return this.commitInFlight;
    this.commitInFlight = this.commitInFlight
      .then(() => this.consumer.commitOffsets(offsets))
      .catch((err: unknown) => {
        this.log.warn(
          { err, partitions: offsets.length },
          'offset commit failed; that work may be re-delivered',
        );
      });
    return this.commitInFlight;
  }
}

/** Group-coordinator refusals that mean this member must rejoin. */
const REBALANCE_ERRORS = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID']);

function normaliseHeaders(h: IHeaders | undefined): Record<string, HeaderValue | undefined> {
  const out: Record<string, HeaderValue | undefined> = {};
  if (!h) return out;
  for (const [k, v] of Object.entries(h)) {
    out[k] = Array.isArray(v) ? (v[v.length - 1] as HeaderValue | undefined) : (v as HeaderValue | undefined);
  }
  return out;
}
