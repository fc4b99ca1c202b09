/**
 * Our own small view of Kafka. Everything above this line speaks these types; the kafkajs
 * adapter (`kafkajs-adapter.ts`, with `kafkajs-producer.ts` and `kafkajs-sticky-assigner.ts`) is the only code that knows
 * kafkajs exists, so the client can be swapped (kafkajs is unmaintained upstream) by writing one
 * new adapter. Group members are assigned partitions stickily (`sticky-assignment.ts`).
 */

export type HeaderValue = Buffer | string;

export interface InboundMessage {
  topic: string;
  partition: number;
  /** Offset as a decimal string (64-bit). */
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, HeaderValue | undefined>;
  /** Broker/producer timestamp, ms since epoch. */
  timestampMs: number;
}

export interface OutboundMessage {
  key?: string | Buffer | null;
  value: Buffer | string | null;
  headers?: Record<string, HeaderValue>;
  partition?: number;
}

export interface MessageProducer {
  /**
   * Sends and waits for the broker's acknowledgement (acks=all). Concurrent sends are coalesced into
   * one request (in submission order), like a client's linger: see `SendCoalescer`.
   */
  send(topic: string, messages: OutboundMessage[]): Promise<void>;
  /**
   * The largest record (key + value + headers, as `recordBytesUpperBound` counts them) the topic
   * accepts on its own: a `send` with a larger one fails with `RecordTooLargeError`, sending nothing.
   */
  maxRecordBytes(topic: string): Promise<number>;
  disconnect(): Promise<void>;
}

/**
 * What a producer recovered from: `split`, a request the broker refused for its size, sent again
 * in halves; `reset`, an idempotent-producer sequence error, sent again from a new producer.
 */
export type ProducerRecoveryListener = (kind: 'split' | 'reset', errorType: string) => void;

/** A record larger than its topic accepts (its `max.message.bytes`): nothing of the send was sent. */
export class RecordTooLargeError extends Error {
  readonly code = 'KAFKA_E_RECORD_TOO_LARGE';
  constructor(
    readonly topic: string,
    /** Index of the first such record in the send. */
    readonly index: number,
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(
      `${topic} accepts records of at most ${maxBytes} bytes (its max.message.bytes less the batch overhead); record ${index} of the send has ${bytes}`,
    );
    this.name = 'RecordTooLargeError';
  }
}

export interface PartitionBatch {
  topic: string;
  partition: number;
  messages: InboundMessage[];
  /**
   * The partition's end offset (the offset the next record will get) as the fetch that brought
   * this batch saw it, as a decimal string; absent when the client does not say.
   */
  highWatermark?: string;
}

export interface BatchControl {
  /** Keeps the group membership alive during long batch work. */
  heartbeat(): Promise<void>;
  /** True once a rebalance has started or the consumer is stopping: finish quickly. */
  isStale(): boolean;
}

export interface GroupConsumerHandlers {
  /** Called with the partitions newly assigned to this member (after a join), before any batch of them. */
  onAssigned?(topic: string, partitions: number[]): Promise<void>;
  /** Called with the partitions this member no longer owns (after a rejoin, a crash or stop). */
  onRevoked?(topic: string, partitions: number[]): Promise<void>;
  /**
   * Whether the handlers still hold a partition they were given (default: yes). One they let go
   * of (a scheduler partition whose epoch another owner bumped, a setup that failed) is not
   * claimed when the group rebalances, and is passed to `onAssigned` again when an assignment
   * gives it back, or when it is still assigned to this member a session timeout later.
   */
  holds?(topic: string, partition: number): boolean;
  /**
   * One fetched batch of one partition. When the promise resolves, the offset after the last
   * message is committed (a sampling consumer, `sampleEveryMs`, commits nothing); when it rejects,
   * nothing is committed and the batch is fetched again.
   */
  onBatch(batch: PartitionBatch, control: BatchControl): Promise<void>;
}

export interface GroupConsumerOptions {
  groupId: string;
  topics: string[];
  /** Start from the earliest offset when the group has none. Default true. */
  fromBeginning?: boolean;
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  rebalanceTimeoutMs?: number;
  /** Broker long-poll bound; low values lower latency at the cost of more fetches. */
  maxWaitTimeMs?: number;
  /** The broker holds a fetch until this many bytes are ready (or maxWaitTimeMs). Default 1. */
  minBytes?: number;
  maxBytesPerPartition?: number;
  /** Partitions processed concurrently by this member. Default 1. */
  partitionsConsumedConcurrently?: number;
  /**
   * 0 (default): commit each batch's offset before its partition's next batch is handled. Above 0:
   * record it and commit every partition's latest in one request at most this often (and on stop),
   * so that a stream of small batches is not one commit round trip each. A crash or rebalance then
   * re-delivers up to this much already handled work, which at-least-once consumers absorb.
   */
  commitIntervalMs?: number;
  /**
   * Above 0: a sampling consumer, for a gauge rather than a ledger. After each batch of a partition
   * it skips to that partition's end (the high watermark the fetch reported) and leaves the
   * partition unfetched for this many milliseconds (up to `maxWaitTimeMs` more: while every
   * partition is paused the client sleeps that long between checks), so it reads about one fetched
   * batch a partition per interval however fast the topic grows, and a record it skipped is never
   * decoded. Nothing is committed: a member starts from the group's committed offset if there is
   * one, else as `fromBeginning` says. Pair it with a small `maxBytesPerPartition` (the broker sends
   * a first record batch larger than that whole for the first non-empty partition of a fetch; a
   * later partition's comes back empty and is fetched on a later fetch).
   */
  sampleEveryMs?: number;
}

export interface GroupConsumer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Partitions currently assigned, per topic. */
  assignment(): Map<string, number[]>;
  /**
   * Times the consumer was started again after its client gave up on an error it does not retry (a
   * handler's TypeError, say): it is restarted with backoff rather than left consuming nothing.
   */
  restarts(): number;
}

export interface TopicSpec {
  topic: string;
  partitions: number;
  config?: Record<string, string>;
}

export interface KafkaAdminPort {
  ensureTopics(topics: TopicSpec[]): Promise<void>;
  partitionCount(topic: string): Promise<number>;
  /**
   * Each partition's end offset (high watermark: the offset the next record appended will get),
   * read from the partition leaders now. A record acknowledged before this call has an offset
   * below it.
   */
  endOffsets(topic: string): Promise<Map<number, number>>;
  /** Sum over partitions of (end offset − committed offset) for a group. */
  groupLag(groupId: string, topic: string): Promise<number>;
  /**
   * The session timeouts the broker accepts from a group member (`group.min.session.timeout.ms`,
   * `group.max.session.timeout.ms`); a join outside them is refused. Undefined when the broker does
   * not say (describe-configs not allowed, say).
   */
  sessionTimeoutRange(): Promise<{ minMs: number; maxMs: number } | undefined>;
  disconnect(): Promise<void>;
}

export interface KafkaPort {
  /** `lingerMs` (default 0): how long a send waits for others to share its request, beyond those that arrive while one is in flight. */
  producer(options?: {
    idempotent?: boolean;
    lingerMs?: number;
    onRecovery?: ProducerRecoveryListener;
  }): Promise<MessageProducer>;
  groupConsumer(options: GroupConsumerOptions, handlers: GroupConsumerHandlers): GroupConsumer;
  admin(): Promise<KafkaAdminPort>;
}
