/**
 * The Dispatch record (schemas/avro/Dispatch.avsc) as Postgres writes it: the CTEs that emit its
 * fields per claimed row as an outbox record, and what a dispatching statement hands back. The SQL
 * functions they call are migration 015's; the connector's record router encodes the Avro value.
 */

/** A job a firing round claimed and wrote the dispatch record of (`jobClaimDueDispatch`). */
export interface DispatchedJob {
  jobId: string;
  partition: number;
  epoch: number;
  queue: string;
  version: number;
  attempt: number;
  dueAtMs: number;
  /** Database time of the claim: never before dueAtMs. */
  claimedAtMs: number;
  /** The outbox record's id, the record's eventId. */
  eventId: string;
}

/**
 * The fields of Dispatch.avsc in the order layout 2 (migration 015) carries them and the record router
 * writes them; idempotencyKey is derived there, not carried (a test holds the list equal to the schema).
 */
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
export const DISPATCHED_COLUMNS = `e.job_id, e.partition, e.epoch, e.queue, e.version, e.attempt, e.due_ms, e.claimed_ms, e.event_id`;

export interface DispatchedRow {
  job_id: string;
  partition: number;
  epoch: number;
  queue: string;
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
  queue: r.queue,
  version: r.version,
  attempt: r.attempt,
  dueAtMs: r.due_ms,
  claimedAtMs: r.claimed_ms,
  eventId: r.event_id,
});

/**
 * CTEs `z` and `written` that emit the Dispatch record (schemas/avro/Dispatch.avsc) of each row of
 * the CTE `source` as an outbox record: a transactional logical decoding message in layout 2
 * (migration 015), the record's fields, from which the connector's record router builds the Avro
 * value, key and headers. `written` keeps job_id, partition, epoch, version, attempt, due_ms,
 * claimed_ms and event_id for the caller's final SELECT, which must read all of its rows (each is
 * emitted as it is read). `source` has the columns job_id, partition, epoch, tenant_id, queue,
 * version, attempt, due_at, claimed_at, payload, priority, business_key, execution_timeout_ms,
 * headers, schedule_id and occurrence_at; `header` is the parameter holding the Confluent framing.
 */
export const dispatchRecordCtes = (source: string, header: string): string => `
     -- Each string as its UTF-8 bytes and each time as whole ms, one row at a time in a subquery
     -- (OFFSET 0 keeps it): the content function is inlined only if its arguments are columns
     -- (migration 015).
     z AS (
       SELECT c.job_id, c.partition, c.epoch, c.queue, c.version, c.attempt, c.payload, c.priority, c.execution_timeout_ms,
              c.headers, gen_random_uuid() AS event_id, sched_ms(c.due_at) AS due_ms,
              sched_ms(c.claimed_at) AS claimed_ms, sched_ms(c.occurrence_at) AS occ_ms,
              convert_to(c.job_id, 'UTF8') AS u_job, convert_to(c.tenant_id, 'UTF8') AS u_tenant,
              convert_to(c.queue, 'UTF8') AS u_queue, convert_to(c.business_key, 'UTF8') AS u_bk,
              convert_to(c.schedule_id, 'UTF8') AS u_sched
       FROM ${source} c OFFSET 0),
     -- The outbox record of each job, emitted as this CTE's rows are read. The caller's final
     -- SELECT reads every row of it.
     written AS (
       SELECT ${DISPATCHED_COLUMNS},
              sched_dispatch_emit(sched_dispatch_content(${header}::bytea, e.event_id, e.u_job, e.u_tenant, e.u_queue,
                                                         e.version, e.attempt, e.epoch, e.partition, e.due_ms,
                                                         e.claimed_ms, e.payload, e.priority, e.u_bk,
                                                         e.execution_timeout_ms, e.u_sched, e.occ_ms, e.headers),
                                  e.job_id) AS lsn
       FROM z e)
`;
