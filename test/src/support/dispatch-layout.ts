/**
 * Layout 2 of an outbox message (store migration 015: a Dispatch record as its fields), written
 * here from its specification so that tests can hold both sides to it: the SQL that writes it and
 * the connector's record router that reads it. And the Avro bytes the router must make of it,
 * written from Avro's specification over the whole 64-bit range (avsc stops at 2^53).
 */

export interface DispatchFields {
  /** The Confluent framing: magic byte and schema id. */
  framing: Buffer;
  eventId: string;
  jobId: string;
  tenantId: string;
  queue: string;
  version: number;
  attempt: number;
  epoch: bigint;
  partition: number;
  dueAtMs: bigint;
  claimedAtMs: bigint;
  payload: Buffer;
  priority: number;
  businessKey: string | null;
  executionTimeoutMs: bigint | null;
  scheduleId: string | null;
  occurrenceAtMs: bigint | null;
  headers: Record<string, string>;
}

const i32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(v);
  return b;
};
const i64 = (v: bigint): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(v);
  return b;
};
/** A u16 length (65535: null) and the UTF-8 bytes. */
const u16String = (s: string | null): Buffer => {
  const len = Buffer.alloc(2);
  if (s === null) {
    len.writeUInt16BE(0xffff);
    return len;
  }
  const bytes = Buffer.from(s, 'utf8');
  len.writeUInt16BE(bytes.length);
  return Buffer.concat([len, bytes]);
};
const optionalI64 = (v: bigint | null): Buffer =>
  v === null ? Buffer.from([0]) : Buffer.concat([Buffer.from([1]), i64(v)]);

/** Avro's long: zig-zag, then base-128 groups, the low group first. */
export function avroLong(v: bigint | number): Buffer {
  const n = BigInt(v);
  let z = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
  const out: number[] = [];
  while (z >= 0x80n) {
    out.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  out.push(Number(z));
  return Buffer.from(out);
}

const avroBytes = (b: Buffer): Buffer => Buffer.concat([avroLong(b.length), b]);
const avroString = (s: string): Buffer => avroBytes(Buffer.from(s, 'utf8'));

/** An Avro map of strings, in the object's key order: one block, then the end marker. */
export function avroStringMap(m: Record<string, string>): Buffer {
  const entries = Object.entries(m);
  if (entries.length === 0) return Buffer.from([0]);
  return Buffer.concat([
    avroLong(entries.length),
    ...entries.flatMap(([k, v]) => [avroString(k), avroString(v)]),
    Buffer.from([0]),
  ]);
}

/** The message content in layout 2, and where its headers (the Avro map, the rest) start. */
export function dispatchContent(f: DispatchFields): { content: Buffer; headersAt: number } {
  const head = Buffer.concat([
    Buffer.from([2, f.framing.length]),
    f.framing,
    Buffer.from(f.eventId.replace(/-/g, ''), 'hex'),
    u16String(f.jobId),
    u16String(f.tenantId),
    Buffer.from([Buffer.byteLength(f.queue)]),
    Buffer.from(f.queue, 'utf8'),
    i32(f.version),
    i32(f.attempt),
    i64(f.epoch),
    i32(f.partition),
    i64(f.dueAtMs),
    i64(f.claimedAtMs),
    i32(f.payload.length),
    f.payload,
    i32(f.priority),
    u16String(f.businessKey),
    optionalI64(f.executionTimeoutMs),
    u16String(f.scheduleId),
    optionalI64(f.occurrenceAtMs),
  ]);
  return { content: Buffer.concat([head, avroStringMap(f.headers)]), headersAt: head.length };
}

/** The framed Avro value of the Dispatch record (schemas/avro/Dispatch.avsc) for these fields. */
export function dispatchAvro(f: DispatchFields): Buffer {
  const optional = (b: Buffer | null) =>
    b === null ? Buffer.from([0]) : Buffer.concat([Buffer.from([2]), b]);
  return Buffer.concat([
    f.framing,
    avroString(f.eventId),
    avroString(f.jobId),
    avroString(f.tenantId),
    avroString(f.queue),
    avroLong(f.version),
    avroLong(f.attempt),
    avroLong(f.epoch),
    avroLong(f.partition),
    avroLong(f.dueAtMs),
    avroLong(f.claimedAtMs),
    avroBytes(f.payload),
    avroLong(f.priority),
    optional(f.businessKey === null ? null : avroString(f.businessKey)),
    avroString(f.businessKey ?? f.jobId),
    optional(f.executionTimeoutMs === null ? null : avroLong(f.executionTimeoutMs)),
    optional(f.scheduleId === null ? null : avroString(f.scheduleId)),
    optional(f.occurrenceAtMs === null ? null : avroLong(f.occurrenceAtMs)),
    avroStringMap(f.headers),
  ]);
}
