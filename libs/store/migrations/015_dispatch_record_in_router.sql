-- 015: the Dispatch record is encoded by the connector's record router, not by the claim.
--
-- Since 010 the claiming statements (the firing claim and the catch-up claim; a create that
-- dispatches at once encodes in Node) encoded each job's Dispatch record in Avro in SQL (zig-zag varints, unions, UTF-8 strings) and,
-- since 014, rendered the record's seven headers as text for the outbox layout (layout 1). That is
-- about a quarter of the firing claim's CPU in Postgres, on the statement a burst waits for. Here the
-- statement writes the record's fields in a fixed binary layout (layout 2, below) under the same
-- message prefix, and sched.connect.LogicalMessageRouter (deploy/local/java/smt) builds from them
-- the record a consumer sees: the same topic, key, headers and value bytes as layout 1 gave.
-- Measured on this project's 2-core machine, 40,000 jobs claimed in statements of 2,000, three
-- pairs: Postgres backend CPU 29-32 -> 21-23 us a claimed row, wall 43-51 -> 29-32 us.
--
-- Upgrade order: the router (Connect) first. A router that reads layout 1 only fails its task on a
-- layout 2 message with the message's position ("layout version 2"): nothing is lost (the slot
-- keeps the WAL), and the task resumes from there once the new router runs.
--
-- Layout 2, the fields of Dispatch.avsc (schemas/avro), integers big-endian and signed:
--   u8 2 | u8 framing length, framing (the Confluent magic byte and schema id the value starts with)
--   | 16 bytes eventId (a UUID; the record carries its 36-character text)
--   | u16 length, jobId | u16 length, tenantId | u8 length, queue (topic sched.dispatch.<queue>)
--   | i32 version | i32 attempt | i64 epoch | i32 partition | i64 dueAtMs | i64 claimedAtMs
--   | i32 length, payload | i32 priority
--   | u16 length or 65535 (null), businessKey
--   | u8 0 (null) or 1 and i64, executionTimeoutMs
--   | u16 length or 65535 (null), scheduleId
--   | u8 0 (null) or 1 and i64, occurrenceAtMs
--   | the rest: headers, already Avro-encoded (a map of strings: migration 010's sched_avro_string_map).
-- Strings are UTF-8. idempotencyKey is not carried: it is businessKey, else jobId. The Kafka key is
-- jobId; the headers are id (the eventId), eventType (Dispatch), jobId, version, attempt, epoch and
-- tenantId as text, as in layout 1. Too long for the layout (raises SCHED_E_RECORD_FIELD_TOO_LONG, and
-- the statement emits nothing): a framing over 255 bytes, a queue over 255 (001 caps it at 64), a
-- jobId, tenantId, businessKey or scheduleId over 65,534 (commands cap them far lower: ids at 200
-- characters, a CreateJob's businessKey at 500).

-- The content of one Dispatch record in layout 2. STABLE, as 014's content function: Postgres inlines
-- a SQL function only if it calls nothing more volatile than it is declared (convert_to is stable),
-- and uses a parameter that appears twice only if its argument is cheap: callers pass columns (the
-- claim's CTE `z`, dispatch-record.ts) and a statement parameter, never expressions.
CREATE OR REPLACE FUNCTION sched_dispatch_content(
  framing bytea, event_id uuid, u_job bytea, u_tenant bytea, u_queue bytea,
  version integer, attempt integer, epoch bigint, part integer, due_ms bigint, claimed_ms bigint,
  payload bytea, priority integer, u_bk bytea, timeout_ms bigint, u_sched bytea, occ_ms bigint, headers jsonb
) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT '\x02'::bytea
  || CASE WHEN octet_length(framing) < 256 THEN substring(int4send(octet_length(framing)) FROM 4 FOR 1)
          ELSE sched_raise_bytea('SCHED_E_RECORD_FIELD_TOO_LONG: a Dispatch framing of ' || octet_length(framing)::text
                                 || ' bytes (at most 255)') END
  || framing || uuid_send(event_id)
  || sched_u16_len(u_job) || u_job || sched_u16_len(u_tenant) || u_tenant
  || sched_u8_len(u_queue) || u_queue
  || int4send(version) || int4send(attempt) || int8send(epoch) || int4send(part)
  || int8send(due_ms) || int8send(claimed_ms)
  || int4send(octet_length(payload)) || payload
  || int4send(priority)
  || sched_u16_len(u_bk) || coalesce(u_bk, '\x'::bytea)
  || CASE WHEN timeout_ms IS NULL THEN '\x00'::bytea ELSE '\x01'::bytea || int8send(timeout_ms) END
  || sched_u16_len(u_sched) || coalesce(u_sched, '\x'::bytea)
  || CASE WHEN occ_ms IS NULL THEN '\x00'::bytea ELSE '\x01'::bytea || int8send(occ_ms) END
  || sched_avro_string_map(headers)
$$;

-- Emits one Dispatch record (layout 2) as a transactional logical decoding message under 014's prefix;
-- returns its LSN. As sched_outbox_emit: pg_logical_emit_message is STRICT, so content that came out
-- NULL (a NULL among the fields a record must have) raises instead of writing nothing.
CREATE OR REPLACE FUNCTION sched_dispatch_emit(content bytea, job_id text) RETURNS pg_lsn
LANGUAGE sql VOLATILE AS $$
SELECT pg_logical_emit_message(true, 'sched.record.v1', coalesce(content,
  sched_raise_bytea('SCHED_E_RECORD_NULL: the Dispatch record of ' || coalesce(job_id, '?')
                    || ' has no content (a field it must have is NULL)')))
$$;
