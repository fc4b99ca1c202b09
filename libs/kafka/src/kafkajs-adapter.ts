import {
  Kafka,
  logLevel,
  type Admin,
  type Consumer,
  type Message,
  type EachBatchPayload,
  type IHeaders,
  type LogEntry,
  type Producer,
} from 'kafkajs';
import kafkajsModule from 'kafkajs';
import type { Logger } from '@sched/logging';
import type {
  GroupConsumer,
  GroupConsumerHandlers,
  GroupConsumerOptions,
  HeaderValue,
  InboundMessage,
  KafkaPort,
  MessageProducer,
  OutboundMessage,
  ProducerRecoveryListener,
  TopicSpec,
} from './port.js';
import { RecordTooLargeError } from './port.js';
import {
  DEFAULT_LIMITS,
  maxRecordBytes,
  packRequests,
  recordBytesUpperBound,
  type Placed,
  type ProduceLimits,
} from './record-packing.js';
import { AssignmentTracker } from './assignment-tracker.js';
import { partitionForKey } from './murmur2.js';
import { stickyAssigner } from './kafkajs-sticky-assigner.js';
import { SendCoalescer, type TopicMessages } from './send-coalescer.js';

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

/** Error types after which a kafkajs idempotent producer's sequence state cannot be trusted. */
const SEQUENCE_ERRORS = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
  'DUPLICATE_SEQUENCE_NUMBER',
]);
const SIZE_ERRORS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

/** The Kafka error type (`MESSAGE_TOO_LARGE`, …) of a kafkajs error or of what it wraps. */
export function kafkaErrorType(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== 'object' || depth > 5) return undefined;
  const e = err as { type?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown };
  if (typeof e.type === 'string') return e.type;
  for (const inner of [e.cause, e.originalError]) {
    const t = kafkaErrorType(inner, depth + 1);
    if (t) return t;
  }
  if (Array.isArray(e.errors))
    for (const inner of e.errors) {
      const t = kafkaErrorType(inner, depth + 1);
      if (t) return t;
    }
  return undefined;
}

interface TopicInfo {
  limits: ProduceLimits;
  /** 0: unknown (kafkajs then picks the partition). */
  partitions: number;
  readAtMs: number;
}

/** How long the topic and broker limits read from the cluster are trusted before they are read again. */
const LIMITS_TTL_MS = 5 * 60_000;

/**
 * A producer that never sends a request the broker refuses for its size, and that outlives the
 * kafkajs idempotent producer's sequence errors.
 *
 * Sends are coalesced (`SendCoalescer`), then each record's partition is decided here as kafkajs's
 * default partitioner and the Java client decide it (murmur2 of the key: `murmur2.ts`), and the records are
 * packed into requests that keep every partition's batch under the topic's own
 * `max.message.bytes` and the request under the broker's `socket.request.max.bytes`, both read from
 * the cluster (describe-configs) and cached. A record too large for a batch of its own is refused
 * before anything is sent (`RecordTooLargeError`). Should the broker still refuse a request for its
 * size (a limit lowered meanwhile), the limits are read again and the request is split in halves;
 * after that, or after a sequence error (`OUT_OF_ORDER_SEQUENCE_NUMBER`, `UNKNOWN_PRODUCER_ID`,
 * …), the kafkajs producer is replaced by a new one (a new producer id, sequences from 0) and the
 * request sent again once: kafkajs keeps a partition's sequence advanced after a refused request, so
 * every later send of that partition would fail. A record of a partially accepted request may then
 * be written twice (at least once, as any retry).
 */
class KafkajsProducer implements MessageProducer {
  private readonly coalescer: SendCoalescer;
  private producer: Producer | null = null;
  private readonly roundRobin = new Map<string, number>();
  private readonly topics = new Map<string, TopicInfo>();
  private readonly reading = new Map<string, Promise<TopicInfo>>();
  private admin: Admin | null = null;

  constructor(
    private readonly kafka: Kafka,
    private readonly opts: { idempotent: boolean; lingerMs: number; onRecovery?: ProducerRecoveryListener },
    private readonly log: Logger,
  ) {
    this.coalescer = new SendCoalescer((batch) => this.sendPacked(batch), opts.lingerMs);
  }

  async connect(): Promise<void> {
    this.producer = this.newProducer();
    await this.producer.connect();
  }

  private newProducer(): Producer {
    return this.kafka.producer({
      idempotent: this.opts.idempotent,
      // Ordering per partition with retries needs a single in-flight request when idempotent.
      maxInFlightRequests: this.opts.idempotent ? 1 : 5,
      allowAutoTopicCreation: false,
    });
  }

  async send(topic: string, messages: OutboundMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const info = await this.topicInfo(topic);
    const max = maxRecordBytes(info.limits);
    const tooLarge = messages.findIndex((m) => recordBytesUpperBound(m) > max);
    if (tooLarge >= 0)
      throw new RecordTooLargeError(topic, tooLarge, recordBytesUpperBound(messages[tooLarge]!), max);
    return this.coalescer.send(topic, messages);
  }

  async maxRecordBytes(topic: string): Promise<number> {
    return maxRecordBytes((await this.topicInfo(topic)).limits);
  }

  async disconnect(): Promise<void> {
    await this.admin?.disconnect().catch(() => undefined);
    this.admin = null;
    await this.producer?.disconnect();
  }

  /**
   * The topic's limits and partition count: cached; read again in the background once older than
   * `LIMITS_TTL_MS` (sends go on with the cached ones), and at once when `fresh`. One read per
   * topic at a time.
   */
  private topicInfo(topic: string, fresh = false): Promise<TopicInfo> | TopicInfo {
    const known = this.topics.get(topic);
    if (known && !fresh) {
      if (Date.now() - known.readAtMs >= LIMITS_TTL_MS) void this.readTopicInfo(topic);
      return known;
    }
    return this.readTopicInfo(topic);
  }

  private readTopicInfo(topic: string): Promise<TopicInfo> {
    let reading = this.reading.get(topic);
    if (!reading) {
      reading = this.readTopicInfoNow(topic).finally(() => this.reading.delete(topic));
      this.reading.set(topic, reading);
    }
    return reading;
  }

  private async readTopicInfoNow(topic: string): Promise<TopicInfo> {
    const known = this.topics.get(topic);
    try {
      if (!this.admin) {
        const admin = this.kafka.admin();
        await admin.connect();
        this.admin = admin;
      }
      const admin = this.admin;
      const meta = await admin.fetchTopicMetadata({ topics: [topic] });
      const partitions = meta.topics[0]?.partitions.length ?? 0;
      const { brokers } = await admin.describeCluster();
      const res = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          { type: kafkajsModule.ConfigResourceTypes.TOPIC, name: topic, configNames: ['max.message.bytes'] },
          {
            type: kafkajsModule.ConfigResourceTypes.BROKER,
            name: String(brokers[0]!.nodeId),
            configNames: ['socket.request.max.bytes'],
          },
        ],
      });
      const value = (name: string): number | undefined => {
        for (const r of res.resources) {
          const v = Number(r.configEntries.find((e) => e.configName === name)?.configValue);
          if (Number.isFinite(v) && v > 0) return v;
        }
        return undefined;
      };
      const info = {
        limits: {
          maxBatchBytes: value('max.message.bytes') ?? DEFAULT_LIMITS.maxBatchBytes,
          maxRequestBytes: value('socket.request.max.bytes') ?? DEFAULT_LIMITS.maxRequestBytes,
        },
        partitions,
        readAtMs: Date.now(),
      };
      if (partitions > 0) this.topics.set(topic, info);
      return info;
    } catch (err) {
      // Unknown limits: Kafka's defaults, and the partition count left to kafkajs (no cache).
      this.log.warn({ err, topic }, 'could not read the topic limits; using Kafka defaults');
      return known ?? { limits: DEFAULT_LIMITS, partitions: 0, readAtMs: 0 };
    }
  }

  private async sendPacked(batch: TopicMessages[]): Promise<void> {
    const placed: Placed[] = [];
    for (const t of batch) {
      const info = await this.topicInfo(t.topic);
      for (const m of t.messages) {
        const partition = m.partition ?? this.partitionOf(t.topic, m, info.partitions);
        placed.push({ topic: t.topic, partition, message: m, bytes: recordBytesUpperBound(m) });
      }
    }
    for (const request of packRequests(placed, (t) => this.limitsOf(t), Number.MAX_SAFE_INTEGER))
      await this.sendRequest(request, false);
  }

  /**
   * Where Kafka's default partitioner puts a record: murmur2 of the key, else the next partition
   * in turn; -1 (kafkajs decides) while the partition count is unknown.
   */
  private partitionOf(topic: string, m: OutboundMessage, partitions: number): number {
    if (partitions <= 0) return -1;
    if (m.key != null) return partitionForKey(m.key, partitions);
    const next = (this.roundRobin.get(topic) ?? Math.floor(Math.random() * partitions)) + 1;
    this.roundRobin.set(topic, next % partitions);
    return next % partitions;
  }

  private limitsOf(topic: string): ProduceLimits {
    return this.topics.get(topic)?.limits ?? DEFAULT_LIMITS;
  }

  private async sendRequest(request: Placed[], retried: boolean): Promise<void> {
    const byTopic = new Map<string, Message[]>();
    for (const r of request) {
      const m = toKafkajs(r.message);
      if (r.partition >= 0) m.partition = r.partition;
      const list = byTopic.get(r.topic);
      if (list) list.push(m);
      else byTopic.set(r.topic, [m]);
    }
    try {
      await this.producer!.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
    } catch (err) {
      const type = kafkaErrorType(err);
      const tooLarge = type !== undefined && SIZE_ERRORS.has(type);
      if (retried || (!tooLarge && !(type !== undefined && SEQUENCE_ERRORS.has(type)))) throw err;
      await this.reset(type, err, request.length);
      if (!tooLarge) return this.sendRequest(request, true);
      for (const topic of byTopic.keys()) await this.topicInfo(topic, true);
      if (request.length === 1) {
        const r = request[0]!;
        throw new RecordTooLargeError(r.topic, 0, r.bytes, maxRecordBytes(this.limitsOf(r.topic)));
      }
      const half = Math.ceil(request.length / 2);
      await this.sendRequest(request.slice(0, half), false);
      await this.sendRequest(request.slice(half), false);
    }
  }

  /** A new kafkajs producer in place of one whose sequence state a failed request left behind. */
  private async reset(type: string, err: unknown, records: number): Promise<void> {
    this.log.warn(
      { err, errorType: type, records },
      'produce request refused: replacing the idempotent producer (new producer id) and sending again',
    );
    this.opts.onRecovery?.(SIZE_ERRORS.has(type) ? 'split' : 'reset', type);
    const old = this.producer;
    this.producer = this.newProducer();
    await old?.disconnect().catch(() => undefined);
    await this.producer.connect();
  }
}

function toKafkajs(m: OutboundMessage): Message {
  return {
    key: m.key ?? null,
    value: m.value,
    headers: m.headers as IHeaders | undefined,
    partition: m.partition,
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
