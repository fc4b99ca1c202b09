import { LogThrottle, type Logger } from '@sched/logging';
import {
  RecordTooLargeError,
  kafkaErrorType,
  recordBytesUpperBound,
  type InboundMessage,
  type MessageProducer,
  type OutboundMessage,
} from '@sched/kafka';
import type { RejectReason, RejectedFields, SchedulerCodec, SchedulerCommand } from '@sched/command-rules';
import type { PartitionRuntime } from './partition-runtime.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/** A record of the command topic the applier cannot apply, and why. */
export interface Rejected {
  msg: InboundMessage;
  reason: RejectReason;
  message: string;
  /** The command, when it decoded (its status records the rejection). */
  cmd?: SchedulerCommand;
}

export interface RejectionPublisherDeps {
  producer: MessageProducer;
  codec: SchedulerCodec;
  metrics: SchedulerMetrics;
  log: Logger;
  rejectedTopic: string;
  ownerId: string;
}

/**
 * Writes rejected commands to the rejected topic: each record fitted under the topic's size limit,
 * a failed publish retried while the partition is owned, every rejection counted and (throttled)
 * logged.
 */
export class RejectionPublisher {
  private readonly rejectLog = new LogThrottle(1_000);
  private readonly publishFailLog = new LogThrottle(5_000);

  constructor(private readonly d: RejectionPublisherDeps) {}

  /**
   * Produces the batch's rejections (acks=all) before its offset may advance. A failure is retried
   * here, with backoff, for as long as this process owns the partition, rather than failing the
   * batch: a failed batch would restart the consumer on the same batch, which fails the same way
   * (the wedge of a rejection request too large for the broker). The producer splits requests by
   * the topic's own size limit and recovers from sequence errors itself; what is left to retry here
   * is an unreachable broker or topic, each attempt logged (throttled) and counted.
   */
  async publish(rt: PartitionRuntime, rejected: Rejected[]): Promise<void> {
    const topic = this.d.rejectedTopic;
    const now = Date.now();
    let maxBytes = await this.d.producer.maxRecordBytes(topic);
    let records = rejected.map((r) => this.rejectionRecord(r, now, maxBytes));
    for (let attempt = 1; ; attempt++) {
      try {
        await this.d.producer.send(topic, records);
        break;
      } catch (err) {
        if (rt.closed) throw err; // not ours any more: its next owner reads the batch again
        const error = err instanceof RecordTooLargeError ? err.code : (kafkaErrorType(err) ?? errorName(err));
        this.d.metrics.rejectionPublishFailures.inc({ error });
        const pass = this.publishFailLog.take(error);
        if (pass)
          this.d.log.warn(
            {
              err,
              error,
              partition: rt.partition,
              rejections: records.length,
              attempt,
              sameErrorNotLogged: pass.dropped,
            },
            'rejected commands not produced yet: retrying (the partition waits; nothing is skipped)',
          );
        if (err instanceof RecordTooLargeError) {
          // The topic's limit changed under us: fit the records to what it says now.
          maxBytes = Math.min(await this.d.producer.maxRecordBytes(topic), err.maxBytes);
          records = rejected.map((r) => this.rejectionRecord(r, now, maxBytes));
        }
        await sleep(Math.min(REJECT_RETRY_MAX_MS, REJECT_RETRY_FIRST_MS * 2 ** Math.min(attempt - 1, 10)));
      }
    }
    for (const r of rejected) {
      this.d.metrics.commandsRejected.inc({ reason: r.reason });
      // Every rejection is on the rejected topic and in the metric; the log gets one line per
      // reason a second, so a flood of bad input cannot keep the process busy writing lines.
      const pass = this.rejectLog.take(r.reason);
      if (pass)
        this.d.log.warn(
          {
            reason: r.reason,
            partition: r.msg.partition,
            offset: r.msg.offset,
            sameReasonNotLogged: pass.dropped,
          },
          r.message,
        );
    }
  }

  /**
   * One rejection record, no larger than `maxBytes`: the original key and value whole when they
   * fit, else their first bytes with their full sizes (`originalKeyBytes`, `originalValueBytes`);
   * the record itself stays at its source partition and offset while the topic retains it.
   */
  private rejectionRecord(r: Rejected, now: number, maxBytes: number): OutboundMessage {
    const key = r.msg.key;
    const value = r.msg.value ?? Buffer.alloc(0);
    const fields: RejectedFields = {
      reasonCode: r.reason,
      message:
        r.message.length > MAX_REJECT_MESSAGE_CHARS
          ? `${r.message.slice(0, MAX_REJECT_MESSAGE_CHARS)}…`
          : r.message,
      sourceTopic: r.msg.topic,
      sourcePartition: r.msg.partition,
      sourceOffset: r.msg.offset,
      originalKey: key,
      originalValue: value,
      rejectedAtMs: now,
      schedulerId: this.d.ownerId,
    };
    const headers = { reason: r.reason };
    const record = (): OutboundMessage => ({
      key: fields.originalKey,
      value: this.d.codec.encodeRejected(fields),
      headers,
    });
    let out = record();
    if (recordBytesUpperBound(out) <= maxBytes) return out;
    if (key && key.length > KEPT_KEY_BYTES) {
      fields.originalKey = key.subarray(0, KEPT_KEY_BYTES);
      fields.originalKeyBytes = key.length;
      out = record();
    }
    const over = recordBytesUpperBound(out) - maxBytes;
    if (over > 0) {
      // The Avro length prefix of a shorter value is no longer: `over` bytes less (and some slack)
      // bring the record under the limit.
      fields.originalValue = value.subarray(0, Math.max(0, value.length - over - 16));
      fields.originalValueBytes = value.length;
      out = record();
    }
    this.d.metrics.rejectionsTruncated.inc();
    const pass = this.rejectLog.take('truncated');
    if (pass)
      this.d.log.warn(
        {
          sameNotLogged: pass.dropped,
          partition: r.msg.partition,
          offset: r.msg.offset,
          keyBytes: key?.length ?? 0,
          valueBytes: value.length,
          maxBytes,
        },
        'rejected command too large to forward whole: its rejection carries the first bytes and the source offset',
      );
    return out;
  }
}

/** Rejection publishing retries: first after 100 ms, doubling, at most every 5 s. */
const REJECT_RETRY_FIRST_MS = 100;
const REJECT_RETRY_MAX_MS = 5_000;
/** A rejection's explanation is cut at this many characters (it may quote hostile input). */
const MAX_REJECT_MESSAGE_CHARS = 2_000;
/** How much of a key too large to forward a rejection keeps (and uses as its own Kafka key). */
const KEPT_KEY_BYTES = 1_024;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : 'unknown';
}
