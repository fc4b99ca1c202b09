package sched.connect;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
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
 * <p>Headers are strings, as Debezium's outbox router with Connect's {@code SimpleHeaderConverter}
 * writes them, so a consumer sees the same bytes whichever path wrote the record. Content that does
 * not parse fails the task with the message's position in the error: nothing is dropped silently.
 */
public final class LogicalMessageRouter<R extends ConnectRecord<R>> implements Transformation<R> {
  public static final String PREFIX_CONFIG = "prefix";
  public static final String DEFAULT_PREFIX = "sched.record.v1";
  static final byte LAYOUT_VERSION = 1;
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
    if (version != LAYOUT_VERSION) {
      throw new IllegalArgumentException("layout version " + version + ", this router reads " + LAYOUT_VERSION);
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
