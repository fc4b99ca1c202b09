/**
 * The Dispatch record (schemas/avro/Dispatch.avsc) as Postgres writes it: the CTEs that encode it
 * per claimed row and emit its outbox record, and what a dispatching statement hands back. The SQL
 * functions they call are migrations 010 and 011's.
 */

/** A job a firing round claimed and wrote the dispatch record of (`jobClaimDueDispatch`). */
export interface DispatchedJob {
  jobId: string;
  partition: number;
  epoch: number;
  version: number;
  attempt: number;
  dueAtMs: number;
  /** Database time of the claim: never before dueAtMs. */
  claimedAtMs: number;
  /** The outbox record's id, the record's eventId. */
  eventId: string;
}

/** The fields of Dispatch.avsc in the order `jobClaimDueDispatch` writes them (a test holds the two equal). */
export const DISPATCH_SQL_FIELDS = [
  'eventId',
  'jobId',
  'tenantId',
  'queue',
  'version',
  'attempt',
  'epoch',
  'partition',
  'dueAtMs',
  'claimedAtMs',
  'payload',
  'priority',
  'businessKey',
  'idempotencyKey',
  'executionTimeoutMs',
  'scheduleId',
  'occurrenceAtMs',
  'headers',
] as const;

/** What a claim UPDATE returns for `dispatchRecordCtes` (as its `source`), `j` the job row. */
export const DISPATCH_SOURCE_COLUMNS = `j.job_id, j.partition, j.claim_epoch AS epoch, j.tenant_id, j.queue, j.version,
         j.attempt, j.due_at, now() AS claimed_at, j.payload, j.priority, j.business_key, j.execution_timeout_ms,
         j.headers, j.schedule_id, j.occurrence_at`;

/**
 * What a dispatching statement hands back per job, from `written e`. Reading `written` is what
 * emits each job's outbox record: a dispatching statement must read every row of it.
 */
export const DISPATCHED_COLUMNS = `e.job_id, e.partition, e.epoch, e.version, e.attempt, e.due_ms, e.claimed_ms, e.event_id`;

export interface DispatchedRow {
  job_id: string;
  partition: number;
  epoch: number;
  version: number;
  attempt: number;
  due_ms: number;
  claimed_ms: number;
  event_id: string;
}

export const toDispatched = (r: DispatchedRow): DispatchedJob => ({
  jobId: r.job_id,
  partition: r.partition,
  epoch: r.epoch,
  version: r.version,
  attempt: r.attempt,
  dueAtMs: r.due_ms,
  claimedAtMs: r.claimed_ms,
  eventId: r.event_id,
});

/**
 * CTEs `z`, `y`, `enc` and `written` that encode a Dispatch record (schemas/avro/Dispatch.avsc) per row of
 * the CTE `source` with the functions of migrations 010 and 011 and emit it as an outbox record (a
 * transactional logical decoding message, migration 014); `written` keeps job_id, partition, epoch,
 * version, attempt, due_ms, claimed_ms and event_id for the caller's final SELECT, which must read all
 * of its rows (each is emitted as it is read). `source` has the columns job_id, partition, epoch,
 * tenant_id, queue, version, attempt, due_at, claimed_at, payload, priority, business_key, execution_timeout_ms, headers,
 * schedule_id and occurrence_at; `header` is the parameter holding the Confluent framing.
 * `idempotencyKey` is the businessKey, else the job id, as `idempotencyKeyOf` in the scheduler.
 */
export const dispatchRecordCtes = (source: string, header: string): string => `
     -- Each string as its UTF-8 bytes and each number as its zig-zag value, then the lengths, one
     -- row at a time in subqueries (OFFSET 0 keeps them): a varint's argument must be a column for
     -- the varint to be inlined (migrations 010 and 011).
     z AS (
       SELECT c.job_id, c.partition, c.epoch, c.tenant_id, c.queue, c.version, c.attempt, c.payload, c.headers,
              gen_random_uuid() AS event_id, sched_ms(c.due_at) AS due_ms, sched_ms(c.claimed_at) AS claimed_ms,
              sched_ms(c.occurrence_at) AS occ_ms,
              convert_to(c.job_id, 'UTF8') AS u_job, convert_to(c.tenant_id, 'UTF8') AS u_tenant,
              convert_to(c.queue, 'UTF8') AS u_queue, convert_to(c.business_key, 'UTF8') AS u_bk,
              convert_to(coalesce(c.business_key, c.job_id), 'UTF8') AS u_idem,
              convert_to(c.schedule_id, 'UTF8') AS u_sched,
              sched_avro_zigzag(c.version) AS z_version, sched_avro_zigzag(c.attempt) AS z_attempt,
              sched_avro_zigzag(c.epoch) AS z_epoch, sched_avro_zigzag(c.partition) AS z_partition,
              sched_avro_zigzag(c.priority) AS z_priority, sched_avro_zigzag(c.execution_timeout_ms) AS z_timeout
       FROM ${source} c OFFSET 0),
     y AS (
       SELECT z.*, octet_length(z.u_job)::bigint << 1 AS l_job, octet_length(z.u_tenant)::bigint << 1 AS l_tenant,
              octet_length(z.u_queue)::bigint << 1 AS l_queue, octet_length(z.u_bk)::bigint << 1 AS l_bk,
              octet_length(z.u_idem)::bigint << 1 AS l_idem, octet_length(z.u_sched)::bigint << 1 AS l_sched,
              octet_length(z.payload)::bigint << 1 AS l_payload, sched_avro_zigzag(z.due_ms) AS z_due,
              sched_avro_zigzag(z.claimed_ms) AS z_claimed, sched_avro_zigzag(z.occ_ms) AS z_occurrence
       FROM z OFFSET 0),
     -- The record, field by field in Dispatch.avsc's order (DISPATCH_SQL_FIELDS); an optional field is
     -- a union: branch 0 null, branch 1 the value. The event id is a UUID: always 36 characters.
     enc AS (
       SELECT y.job_id, y.partition, y.epoch, y.tenant_id, y.queue, y.version, y.attempt, y.due_ms, y.claimed_ms,
              y.event_id,
              ${header}::bytea
              || '\\x48'::bytea || convert_to(y.event_id::text, 'UTF8')
              || sched_avro_varint_small(y.l_job) || y.u_job
              || sched_avro_varint_small(y.l_tenant) || y.u_tenant
              || sched_avro_varint_small(y.l_queue) || y.u_queue
              || sched_avro_varint_small(y.z_version) || sched_avro_varint_small(y.z_attempt)
              || sched_avro_varint_small(y.z_epoch) || sched_avro_varint_small(y.z_partition)
              || sched_avro_varint_ms(y.z_due) || sched_avro_varint_ms(y.z_claimed)
              || sched_avro_varint_small(y.l_payload) || y.payload
              || sched_avro_varint_small(y.z_priority)
              || CASE WHEN y.u_bk IS NULL THEN '\\x00'::bytea
                      ELSE '\\x02'::bytea || sched_avro_varint_small(y.l_bk) || y.u_bk END
              || sched_avro_varint_small(y.l_idem) || y.u_idem
              || CASE WHEN y.z_timeout IS NULL THEN '\\x00'::bytea
                      ELSE '\\x02'::bytea || sched_avro_varint_small(y.z_timeout) END
              || CASE WHEN y.u_sched IS NULL THEN '\\x00'::bytea
                      ELSE '\\x02'::bytea || sched_avro_varint_small(y.l_sched) || y.u_sched END
              || CASE WHEN y.z_occurrence IS NULL THEN '\\x00'::bytea
                      ELSE '\\x02'::bytea || sched_avro_varint_ms(y.z_occurrence) END
              || sched_avro_string_map(y.headers) AS record
       FROM y),
     -- The outbox record of each job: a transactional logical decoding message (migration 014), emitted
     -- as this CTE's rows are read. The caller's final SELECT reads every row of it.
     written AS (
       SELECT ${DISPATCHED_COLUMNS},
              sched_outbox_emit('dispatch.' || e.queue, e.job_id, e.event_id::text, 'Dispatch', e.job_id,
                                e.version, e.attempt, e.epoch, e.tenant_id, e.record) AS lsn
       FROM enc e)
`;
