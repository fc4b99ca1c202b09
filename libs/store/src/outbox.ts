import type pg from 'pg';
import { FENCE_CTE } from './fencing.js';

/** One record of the transactional outbox, as the scheduler's own Node code writes it. */
export interface OutboxRow {
  id: string;
  /** `dispatch.<queue>` or `events`: Debezium routes to `sched.<aggregatetype>`. */
  aggregateType: string;
  aggregateId: string;
  type: string;
  payload: Buffer;
  jobId: string | null;
  version: number | null;
  attempt: number | null;
  tenantId: string | null;
}

/** The outbox rows as the nine column arrays both inserts unnest, in their column order. */
function outboxColumns(rows: readonly OutboxRow[]): unknown[][] {
  return [
    rows.map((r) => r.id),
    rows.map((r) => r.aggregateType),
    rows.map((r) => r.aggregateId),
    rows.map((r) => r.type),
    rows.map((r) => r.payload),
    rows.map((r) => r.jobId),
    rows.map((r) => r.version),
    rows.map((r) => r.attempt),
    rows.map((r) => r.tenantId),
  ];
}

/**
 * outbox_emit: emits outbox records in the caller's transaction, fenced by the partition epoch: each
 * a transactional logical decoding message (migration 014) that Debezium hands on at commit and the
 * connector's router turns into the record `sched.<aggregateType>` would have had from an outbox row.
 * Returns how many were emitted (none when the epoch is not current).
 */
export async function outboxEmit(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  rows: OutboxRow[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const res = await client.query<{ n: number }>({
    name: 'outbox_emit',
    text: `WITH ${FENCE_CTE}
     SELECT count(sched_outbox_emit(o.agg_type, o.agg_id, o.id::text, o.type, o.job_id, o.version, o.attempt,
                                    $2::bigint, o.tenant_id, o.payload))::int AS n
     FROM fence, unnest($3::uuid[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::text[], $9::int[], $10::int[], $11::text[])
       AS o(id, agg_type, agg_id, type, payload, job_id, version, attempt, tenant_id)`,
    values: [partition, epoch, ...outboxColumns(rows)],
  });
  return res.rows[0]?.n ?? 0;
}

/**
 * Whether the schema has migration 014's `sched_outbox_emit`: every writer of outbox records needs
 * it (a worker writes lifecycle events), and a worker does not migrate. Resolved on the pool's
 * search path, as the writers' statements are.
 */
export async function outboxEmitReady(client: pg.ClientBase | pg.Pool): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>(
    `SELECT to_regprocedure('sched_outbox_emit(text, text, text, text, text, integer, integer, bigint, text, bytea)') IS NOT NULL AS ok`,
  );
  return rows[0]?.ok === true;
}

/** The outbox's replication slot as Postgres sees it (`pg_replication_slots`). */
export interface SlotState {
  /** Whether a consumer (Debezium) holds the slot now. */
  active: boolean;
  /** WAL bytes between the server's current position and what the consumer confirmed. */
  lagBytes: number;
}

/**
 * The replication slot the outbox is relayed through, or null when there is none by that name (or
 * this is a standby, whose WAL position is not its own). The sampled publication lag goes silent
 * when the relay stops; this does not.
 */
export async function outboxSlotState(pool: pg.Pool, slotName: string): Promise<SlotState | null> {
  const { rows } = await pool.query<{ active: boolean; lag: number | null; standby: boolean }>(
    `SELECT active, pg_is_in_recovery() AS standby,
            CASE WHEN pg_is_in_recovery() THEN NULL
                 ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::float8 END AS lag
     FROM pg_replication_slots WHERE slot_name = $1`,
    [slotName],
  );
  const r = rows[0];
  if (!r || r.standby) return null;
  return { active: r.active, lagBytes: Math.max(0, r.lag ?? 0) };
}
