package sched.connect;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Headers;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * Turns a Postgres logical decoding message written by the scheduler ({@code
 * pg_logical_emit_message(true, 'sched.record.v1', content)}, store migration 014) into the Kafka record it
 * describes. Debezium's Postgres connector hands such a message on as one record on {@code
 * <topic.prefix>.message} whose value is a struct with a {@code message} struct ({@code prefix},
 * {@code content}); this transformation reads the content and returns a record for the topic, key,
 * headers and value bytes the content names. A record that is not a message of our prefix passes
 * through unchanged.
 *
 * <p>The content (version 1), all lengths big-endian:
 *
 * <pre>
 *   u8  1 (the layout's version)
 *   u8  topic length, topic (UTF-8)
 *   u16 key length, key (UTF-8)
 *   u8  header count, then per header: u8 name length, name (UTF-8), u16 value length, value (UTF-8)
 *   (a u16 length of 65535 stands for no value: a null key or header value)
 *   the rest: the record's value, as bytes
 * </pre>
 *
 * <p>Version 2 (store migration 015) is a Dispatch record (schemas/avro/Dispatch.avsc) as its fields,
 * integers big-endian and signed; this router encodes the record's Avro value and names its topic,
 * key and headers:
 *
 * <pre>
 *   u8  2
 *   u8  framing length, framing (Confluent magic byte and schema id: the value's first bytes)
 *   16 bytes eventId (a UUID, written as its 36-character text)
 *   u16 length, jobId; u16 length, tenantId; u8 length, queue (topic sched.dispatch.&lt;queue&gt;)
 *   i32 version, i32 attempt, i64 epoch, i32 partition, i64 dueAtMs, i64 claimedAtMs
 *   i32 length, payload; i32 priority
 *   u16 length (65535: null), businessKey
 *   u8 0 (null) or 1 then i64, executionTimeoutMs
 *   u16 length (65535: null), scheduleId
 *   u8 0 (null) or 1 then i64, occurrenceAtMs
 *   the rest: headers, Avro-encoded already (a map of strings)
 * </pre>
 *
 * The key is jobId; idempotencyKey is businessKey, else jobId; the headers are those layout 1 carries
 * for a Dispatch record (id, eventType, jobId, version, attempt, epoch, tenantId), so a consumer sees
 * the same record whichever layout wrote it.
 *
 * <p>Headers are strings, as Debezium's outbox router with Connect's {@code SimpleHeaderConverter}
 * writes them, so a consumer sees the same bytes whichever path wrote the record. Content that does
 * not parse fails the task with the message's position in the error: nothing is dropped silently.
 */
public final class LogicalMessageRouter<R extends ConnectRecord<R>> implements Transformation<R> {
  public static final String PREFIX_CONFIG = "prefix";
  public static final String DEFAULT_PREFIX = "sched.record.v1";
  static final byte LAYOUT_VERSION = 1;
  static final byte DISPATCH_LAYOUT_VERSION = 2;
  static final String DISPATCH_TOPIC_PREFIX = "sched.dispatch.";
  static final int NO_VALUE = 0xffff;

  private String prefix = DEFAULT_PREFIX;

  @Override
  public void configure(Map<String, ?> configs) {
    Object p = configs.get(PREFIX_CONFIG);
    if (p != null && !p.toString().isEmpty()) prefix = p.toString();
  }

  @Override
  public R apply(R record) {
    if (!(record.value() instanceof Struct)) return record;
    Struct value = (Struct) record.value();
    if (value.schema().field("message") == null) return record;
    Struct message = value.getStruct("message");
    if (message == null || !prefix.equals(message.getString("prefix"))) return record;
    Object raw = message.get("content");
    byte[] content = raw instanceof ByteBuffer ? toArray((ByteBuffer) raw) : (byte[]) raw;
    try {
      return route(record, value, ByteBuffer.wrap(content));
    } catch (RuntimeException e) {
      throw new DataException(
          "sched.connect.LogicalMessageRouter: message content at "
              + (record instanceof SourceRecord ? ((SourceRecord) record).sourceOffset() : "?")
              + " does not parse ("
              + content.length
              + " bytes): "
              + e,
          e);
    }
  }

  private R route(R record, Struct value, ByteBuffer in) {
    byte version = in.get();
    if (version == DISPATCH_LAYOUT_VERSION) return dispatch(record, value, in);
    if (version != LAYOUT_VERSION) {
      throw new IllegalArgumentException(
          "layout version " + version + ", this router reads " + LAYOUT_VERSION + " and " + DISPATCH_LAYOUT_VERSION);
    }
    String topic = string(in, in.get() & 0xff);
    String key = nullableString(in);
    int headerCount = in.get() & 0xff;
    Headers headers = new ConnectHeaders();
    for (int i = 0; i < headerCount; i++) {
      String name = string(in, in.get() & 0xff);
      headers.addString(name, nullableString(in));
    }
    byte[] payload = new byte[in.remaining()];
    in.get(payload);
    return record.newRecord(
        topic, null, Schema.STRING_SCHEMA, key, Schema.BYTES_SCHEMA, payload, timestampOf(record, value), headers);
  }

  /** Layout 2: a Dispatch record's fields, encoded here as Avro (field order of Dispatch.avsc). */
  private R dispatch(R record, Struct value, ByteBuffer in) {
    byte[] framing = new byte[in.get() & 0xff];
    in.get(framing);
    String eventId = new UUID(in.getLong(), in.getLong()).toString();
    byte[] jobId = bytes(in, in.getShort() & 0xffff);
    byte[] tenantId = bytes(in, in.getShort() & 0xffff);
    byte[] queue = bytes(in, in.get() & 0xff);
    int version = in.getInt();
    int attempt = in.getInt();
    long epoch = in.getLong();
    int partition = in.getInt();
    long dueAtMs = in.getLong();
    long claimedAtMs = in.getLong();
    int payloadLength = in.getInt();
    if (payloadLength < 0) throw new IllegalArgumentException("payload length " + payloadLength);
    int payloadAt = in.position();
    in.position(payloadAt + payloadLength);
    int priority = in.getInt();
    byte[] businessKey = nullableBytes(in);
    Long executionTimeoutMs = nullableLong(in);
    byte[] scheduleId = nullableBytes(in);
    Long occurrenceAtMs = nullableLong(in);
    int headersAt = in.position();

    AvroOut out = new AvroOut(framing.length + 160 + payloadLength + jobId.length * 2 + in.remaining());
    out.raw(framing, 0, framing.length);
    out.string(eventId.getBytes(StandardCharsets.US_ASCII));
    out.string(jobId);
    out.string(tenantId);
    out.string(queue);
    out.varlong(version);
    out.varlong(attempt);
    out.varlong(epoch);
    out.varlong(partition);
    out.varlong(dueAtMs);
    out.varlong(claimedAtMs);
    out.varlong(payloadLength);
    out.raw(in.array(), in.arrayOffset() + payloadAt, payloadLength);
    out.varlong(priority);
    out.optionalString(businessKey);
    out.string(businessKey != null ? businessKey : jobId);
    out.optionalLong(executionTimeoutMs);
    out.optionalString(scheduleId);
    out.optionalLong(occurrenceAtMs);
    out.raw(in.array(), in.arrayOffset() + headersAt, in.limit() - headersAt);

    String job = new String(jobId, StandardCharsets.UTF_8);
    Headers headers = new ConnectHeaders();
    headers.addString("id", eventId);
    headers.addString("eventType", "Dispatch");
    headers.addString("jobId", job);
    headers.addString("version", Integer.toString(version));
    headers.addString("attempt", Integer.toString(attempt));
    headers.addString("epoch", Long.toString(epoch));
    headers.addString("tenantId", new String(tenantId, StandardCharsets.UTF_8));
    String topic = DISPATCH_TOPIC_PREFIX + new String(queue, StandardCharsets.UTF_8);
    return record.newRecord(
        topic, null, Schema.STRING_SCHEMA, job, Schema.BYTES_SCHEMA, out.bytes(), timestampOf(record, value), headers);
  }

  /** Avro's binary encoding, only what the Dispatch record needs, into a growing array. */
  private static final class AvroOut {
    private byte[] buf;
    private int size;

    AvroOut(int capacity) {
      buf = new byte[Math.max(capacity, 64)];
    }

    private void room(int n) {
      if (size + n > buf.length) buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + n));
    }

    void raw(byte[] b, int offset, int length) {
      room(length);
      System.arraycopy(b, offset, buf, size, length);
      size += length;
    }

    /** An int or a long: zig-zag, then base-128 groups, the low group first. */
    void varlong(long v) {
      room(10);
      long z = (v << 1) ^ (v >> 63);
      while ((z & ~0x7FL) != 0) {
        buf[size++] = (byte) ((z & 0x7F) | 0x80);
        z >>>= 7;
      }
      buf[size++] = (byte) z;
    }

    void string(byte[] utf8) {
      varlong(utf8.length);
      raw(utf8, 0, utf8.length);
    }

    /** A ["null", "string"] union: branch 0 for null, else branch 1 and the string. */
    void optionalString(byte[] utf8) {
      if (utf8 == null) {
        varlong(0);
      } else {
        varlong(1);
        string(utf8);
      }
    }

    /** A ["null", "long"] union. */
    void optionalLong(Long v) {
      if (v == null) {
        varlong(0);
      } else {
        varlong(1);
        varlong(v);
      }
    }

    byte[] bytes() {
      return size == buf.length ? buf : Arrays.copyOf(buf, size);
    }
  }

  private static byte[] bytes(ByteBuffer in, int length) {
    byte[] out = new byte[length];
    in.get(out);
    return out;
  }

  /** A u16 length and that many bytes; the length 65535 is null. */
  private static byte[] nullableBytes(ByteBuffer in) {
    int length = in.getShort() & 0xffff;
    return length == NO_VALUE ? null : bytes(in, length);
  }

  /** A u8 flag (0 null, 1 a value) and, if 1, an i64. */
  private static Long nullableLong(ByteBuffer in) {
    byte flag = in.get();
    if (flag == 0) return null;
    if (flag != 1) throw new IllegalArgumentException("optional flag " + flag);
    return in.getLong();
  }

  /**
   * The record's timestamp: the event's {@code ts_ms} (when Debezium handled it), as the outbox router
   * sets it for a row; Debezium leaves a message's record without one.
   */
  private static Long timestampOf(ConnectRecord<?> record, Struct value) {
    if (value.schema().field("ts_ms") != null) {
      Long ts = value.getInt64("ts_ms");
      if (ts != null) return ts;
    }
    return record.timestamp();
  }

  /** A u16 length and that many bytes of UTF-8; the length 65535 is no value (null). */
  private static String nullableString(ByteBuffer in) {
    int length = in.getShort() & 0xffff;
    return length == NO_VALUE ? null : string(in, length);
  }

  private static String string(ByteBuffer in, int length) {
    String s = new String(in.array(), in.arrayOffset() + in.position(), length, StandardCharsets.UTF_8);
    in.position(in.position() + length);
    return s;
  }

  private static byte[] toArray(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  @Override
  public ConfigDef config() {
    return new ConfigDef()
        .define(
            PREFIX_CONFIG,
            ConfigDef.Type.STRING,
            DEFAULT_PREFIX,
            ConfigDef.Importance.MEDIUM,
            "The logical decoding message prefix whose messages this router turns into records.");
  }

  @Override
  public void close() {}
}
