import type { OutboundMessage } from './port.js';

/**
 * What a broker accepts, as it says (describe-configs): `maxBatchBytes` is the topic's
 * `max.message.bytes` (the largest record batch of one partition; the broker's
 * `message.max.bytes` unless the topic overrides it), `maxRequestBytes` bounds a whole produce
 * request (the broker's `socket.request.max.bytes`).
 */
export interface ProduceLimits {
  maxBatchBytes: number;
  maxRequestBytes: number;
}

/**
 * Kafka's record-batch v2 overhead: the 61-byte batch header plus the log entry's offset and
 * length (12 bytes), with room to spare.
 */
export const BATCH_OVERHEAD_BYTES = 128;

/** Kafka's own defaults (message.max.bytes, socket.request.max.bytes) when the broker does not say. */
export const DEFAULT_LIMITS: ProduceLimits = { maxBatchBytes: 1_048_588, maxRequestBytes: 104_857_600 };

const byteLength = (v: string | Buffer | null | undefined): number =>
  v == null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;

/**
 * An upper bound of one record's size in an uncompressed v2 batch: key, value and headers plus the
 * varints around them (length, attributes, timestamp and offset deltas, each length: at most 5 or 10
 * bytes each; 36 covers the record's own fields, 10 each header's two lengths).
 */
export function recordBytesUpperBound(m: OutboundMessage): number {
  let n = 36 + byteLength(m.key) + byteLength(m.value);
  if (m.headers) for (const [k, v] of Object.entries(m.headers)) n += 10 + byteLength(k) + byteLength(v);
  return n;
}

/** The largest record (by `recordBytesUpperBound`) a batch of its own may hold under `limits`. */
export function maxRecordBytes(limits: ProduceLimits): number {
  return Math.min(limits.maxBatchBytes, limits.maxRequestBytes) - BATCH_OVERHEAD_BYTES;
}

export interface Placed {
  topic: string;
  partition: number;
  message: OutboundMessage;
  bytes: number;
}

/**
 * Packs records (each with its partition decided) into produce requests, in order: every request
 * holds at most `maxBatchBytes` per topic partition (with the batch overhead), at most
 * `maxRequestBytes` in all and at most `maxMessages` records, so the broker never refuses one for
 * its size. Order within a partition is kept: a partition's records go out in the order given,
 * request after request. A record too large for a batch of its own is the caller's to refuse
 * first (`maxRecordBytes`); here it would simply travel alone.
 */
export function packRequests(
  records: Placed[],
  limitsOf: (topic: string) => ProduceLimits,
  maxMessages: number,
): Placed[][] {
  const requests: Placed[][] = [];
  let current: Placed[] = [];
  let requestBytes = 0;
  let perPartition = new Map<string, number>();
  for (const r of records) {
    const limits = limitsOf(r.topic);
    const key = `${r.topic}\u0000${r.partition}`;
    const inPartition = perPartition.get(key);
    const batchAfter = (inPartition ?? BATCH_OVERHEAD_BYTES) + r.bytes;
    const requestAfter = requestBytes + r.bytes + (inPartition === undefined ? BATCH_OVERHEAD_BYTES : 0);
    const fits =
      batchAfter <= limits.maxBatchBytes &&
      requestAfter <= limits.maxRequestBytes &&
      current.length < maxMessages;
    if (!fits && current.length > 0) {
      requests.push(current);
      current = [];
      requestBytes = 0;
      perPartition = new Map();
    }
    const before = perPartition.get(key);
    perPartition.set(key, (before ?? BATCH_OVERHEAD_BYTES) + r.bytes);
    requestBytes += r.bytes + (before === undefined ? BATCH_OVERHEAD_BYTES : 0);
    current.push(r);
  }
  if (current.length > 0) requests.push(current);
  return requests;
}
