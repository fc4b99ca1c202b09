import type { Admin, IHeaders, Kafka, Message, Producer } from 'kafkajs';
import kafkajsModule from 'kafkajs';
import type { Logger } from '@sched/logging';
import type { MessageProducer, OutboundMessage, ProducerRecoveryListener } from './port.js';
import { RecordTooLargeError } from './port.js';
import { partitionForKey } from './murmur2.js';
import {
  DEFAULT_LIMITS,
  maxRecordBytes,
  packRequests,
  recordBytesUpperBound,
  type Placed,
  type ProduceLimits,
} from './record-packing.js';
import { SendCoalescer, type TopicMessages } from './send-coalescer.js';

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
export class KafkajsProducer implements MessageProducer {
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
