-- 014: the outbox as transactional logical decoding messages instead of table rows.
--
-- Every writer of the outbox now calls pg_logical_emit_message(true, 'sched.record.v1', content)
-- with the content this function builds from the same values it inserted as an outbox row. The
-- message is part of the writer's transaction (discarded on rollback, decoded at commit, in commit
-- order), Debezium hands it on as a record of `sched.message`, and the connector's
-- sched.connect.LogicalMessageRouter (deploy/local/java/smt) turns it into the record the outbox
-- router made of a row: topic `sched.<aggregatetype>`, key aggregateid, value payload, headers id,
-- eventType, jobId, version, attempt, epoch and tenantId as strings (a NULL column: a header with no
-- value). A consumer sees the same record either way.
--
-- Why: a row costs a heap insert and an index entry inside the claim, a prune later, pgoutput's
-- text rendering of all eleven columns (the payload as hex), and Debezium's row envelope and
-- outbox router. Measured on this project's 2-core machine, 100,000 records in transactions of
-- 2,000, warm: Connect 64.5 -> 30.8 us of CPU a record, the walsender 8.0 -> 4.1, Kafka 27 -> 17;
-- all on Kafka 6.0 -> 3.2 s after the first insert.
--
-- The outbox table stays: the connector still routes its rows (written by code from before this
-- migration during a rolling upgrade), and the retention sweep still prunes it.
--
-- The content (layout version 1; LogicalMessageRouter.java is its reader), big-endian lengths:
--   u8 1 | u8 topic length, topic | u16 key length, key | u8 header count,
--   per header: u8 name length, name, u16 value length (65535: no value), value | the value bytes.
-- Strings are UTF-8. A key or header value longer than 65,534 bytes cannot be written: the function
-- raises rather than write content the router would misread.
--
-- Messages are not tables: every schema of the database emits to the one slot, so every schema's
-- records reach Kafka (as every schema's outbox table did through the one publication; migrate's
-- publishOutbox now only decides whether the legacy table is in the publication). Debezium 3.6.1's
-- restart position (WalPositionLocator) treats a message that ends at its commit's LSN as if it were
-- not transactional, so after a task restart it may publish again the records of the last
-- transaction it had handed on: at least once, as ever; workers dedupe on the record's event id.

-- Raises with the given message; typed bytea so it can stand in an expression. STABLE, like the
-- functions below that call it: a STABLE SQL function is still inlined (Postgres inlines a SQL
-- function only if it calls nothing more volatile than it is declared), and unlike an IMMUTABLE one
-- it is never evaluated while planning, even with constant arguments (a CASE arm that raises would
-- otherwise fail the plan of a statement that writes no row at all).
CREATE OR REPLACE FUNCTION sched_raise_bytea(msg text) RETURNS bytea
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RAISE EXCEPTION '%', msg USING ERRCODE = '22001';
END $$;

-- A u8 length (topics: at most 249 characters in Kafka); none or too long raises.
CREATE OR REPLACE FUNCTION sched_u8_len(b bytea) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT CASE
  WHEN b IS NULL THEN sched_raise_bytea('SCHED_E_RECORD_NULL: an outbox record without a topic (aggregatetype)')
  WHEN octet_length(b) < 256 THEN substring(int4send(octet_length(b)) FROM 4 FOR 1)
  ELSE sched_raise_bytea('SCHED_E_RECORD_FIELD_TOO_LONG: an outbox topic of ' || octet_length(b)::text || ' bytes (at most 255)')
END $$;

-- A u16 length, big-endian; NULL gives 65535 (no value); too long raises.
CREATE OR REPLACE FUNCTION sched_u16_len(b bytea) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT CASE
  WHEN b IS NULL THEN '\xffff'::bytea
  WHEN octet_length(b) < 65535 THEN substring(int4send(octet_length(b)) FROM 3 FOR 2)
  ELSE sched_raise_bytea('SCHED_E_RECORD_FIELD_TOO_LONG: an outbox key or header value of '
                         || octet_length(b)::text || ' bytes (at most 65,534)')
END $$;


-- The content of one outbox record, from the columns of an outbox row. STABLE, not IMMUTABLE:
-- convert_to (and `text || integer`) are stable, and Postgres inlines a SQL function only if it
-- calls nothing more volatile than it is declared. Inlined, it costs a claim a few microseconds a
-- row; called, ~235 µs (measured: a 100k burst claimed in 25.8 s instead of ~7).
CREATE OR REPLACE FUNCTION sched_outbox_content(
  aggregatetype text, aggregateid text, id text, type text, job_id text,
  version integer, attempt integer, epoch bigint, tenant_id text, payload bytea
) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT '\x01'::bytea
  || sched_u8_len(convert_to('sched.' || aggregatetype, 'UTF8')) || convert_to('sched.' || aggregatetype, 'UTF8')
  || sched_u16_len(convert_to(aggregateid, 'UTF8')) || coalesce(convert_to(aggregateid, 'UTF8'), '')
  || '\x07'::bytea
  || '\x02'::bytea || '\x6964'::bytea
  || sched_u16_len(convert_to(id, 'UTF8')) || coalesce(convert_to(id, 'UTF8'), '')
  || '\x09'::bytea || convert_to('eventType', 'UTF8')
  || sched_u16_len(convert_to(type, 'UTF8')) || coalesce(convert_to(type, 'UTF8'), '')
  || '\x05'::bytea || convert_to('jobId', 'UTF8')
  || sched_u16_len(convert_to(job_id, 'UTF8')) || coalesce(convert_to(job_id, 'UTF8'), '')
  || '\x07'::bytea || convert_to('version', 'UTF8')
  || sched_u16_len(convert_to(version::text, 'UTF8')) || coalesce(convert_to(version::text, 'UTF8'), '')
  || '\x07'::bytea || convert_to('attempt', 'UTF8')
  || sched_u16_len(convert_to(attempt::text, 'UTF8')) || coalesce(convert_to(attempt::text, 'UTF8'), '')
  || '\x05'::bytea || convert_to('epoch', 'UTF8')
  || sched_u16_len(convert_to(epoch::text, 'UTF8')) || coalesce(convert_to(epoch::text, 'UTF8'), '')
  || '\x08'::bytea || convert_to('tenantId', 'UTF8')
  || sched_u16_len(convert_to(tenant_id, 'UTF8')) || coalesce(convert_to(tenant_id, 'UTF8'), '')
  || payload
$$;

-- Emits one outbox record as a transactional logical decoding message; returns its LSN.
-- pg_logical_emit_message is STRICT: given no content it would write nothing and say nothing (the
-- outbox table's NOT NULL columns refused such a row), so a record without content (no payload, or
-- a NULL that the Dispatch encoding met) raises, and the writer's transaction with it.
CREATE OR REPLACE FUNCTION sched_outbox_emit(
  aggregatetype text, aggregateid text, id text, type text, job_id text,
  version integer, attempt integer, epoch bigint, tenant_id text, payload bytea
) RETURNS pg_lsn
LANGUAGE sql VOLATILE AS $$
SELECT pg_logical_emit_message(true, 'sched.record.v1', coalesce(
  sched_outbox_content(aggregatetype, aggregateid, id, type, job_id, version, attempt, epoch, tenant_id, payload),
  sched_raise_bytea('SCHED_E_RECORD_NULL: the outbox record ' || coalesce(id, '?') || ' of ' || coalesce(aggregateid, '?')
                    || ' for sched.' || coalesce(aggregatetype, '?') || ' has no content (no payload)')))
$$;
