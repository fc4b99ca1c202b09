import type pg from 'pg';
import { FencedError } from './fencing.js';
import { homeRegionCheck } from './home-region.js';

export interface PartitionOwnership {
  partition: number;
  ownerId: string;
  epoch: number;
  /** Last command-topic offset whose effects are committed (-1: none). */
  appliedOffset: number;
}

/**
 * partition_claim: takes ownership of a partition by bumping its epoch (creating the row at 1).
 * The row lock waits for any in-flight write of the previous owner, whose later writes then
 * fail the fence. Refused (NotHomeRegionError) when a home region is set and `region` is not it.
 */
export async function partitionClaim(
  pool: pg.Pool,
  partition: number,
  ownerId: string,
  region?: string,
): Promise<PartitionOwnership> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Only the home region's schedulers, if one is set; first, in the lock order of a promotion.
    await homeRegionCheck(client, region);
    // FOR UPDATE conflicts with the FOR KEY SHARE of every owner write (the fence) and with the
    // applied_offset update: the bump waits until the previous owner's in-flight writes end.
    await client.query('SELECT 1 FROM partition_owner WHERE partition = $1 FOR UPDATE', [partition]);
    const { rows } = await client.query<{ epoch: number; applied_offset: number }>(
      `INSERT INTO partition_owner (partition, owner_id, epoch, since)
       VALUES ($1, $2, 1, now())
       ON CONFLICT (partition) DO UPDATE
         SET epoch = partition_owner.epoch + 1, owner_id = EXCLUDED.owner_id, since = now()
       RETURNING epoch, applied_offset`,
      [partition, ownerId],
    );
    await client.query('COMMIT');
    const row = rows[0]!;
    return { partition, ownerId, epoch: row.epoch, appliedOffset: row.applied_offset };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/**
 * partition_advance_offset: records the last applied command offset, fenced. Also the first
 * statement of every apply transaction: it row-locks the ownership row, so the epoch cannot move
 * until the transaction ends. Throws FencedError when the epoch is stale.
 */
export async function partitionAdvanceOffset(
  client: pg.ClientBase,
  partition: number,
  epoch: number,
  offset: number,
): Promise<void> {
  const res = await client.query({
    name: 'partition_advance_offset',
    text: 'UPDATE partition_owner SET applied_offset = GREATEST(applied_offset, $3) WHERE partition = $1 AND epoch = $2',
    values: [partition, epoch, offset],
  });
  if (res.rowCount !== 1) throw new FencedError(partition, epoch, 'partition_advance_offset');
}

export interface OwnerRow {
  partition: number;
  ownerId: string;
  epoch: number;
  sinceMs: number;
}

/** partition_owner_list: who owns what (metrics, operators). */
export async function partitionOwnerList(pool: pg.Pool): Promise<OwnerRow[]> {
  const { rows } = await pool.query<{ partition: number; owner_id: string; epoch: number; since_ms: number }>(
    `SELECT partition, owner_id, epoch, (extract(epoch FROM since) * 1000)::float8 AS since_ms
     FROM partition_owner ORDER BY partition`,
  );
  return rows.map((r) => ({
    partition: r.partition,
    ownerId: r.owner_id,
    epoch: r.epoch,
    sinceMs: r.since_ms,
  }));
}

/**
 * The command topic's partition count as this database recorded it at a scheduler's first start
 * (migration 018), recording `partitions` when there is none yet. The caller refuses to run when
 * the two differ.
 */
export async function commandTopicLayout(
  pool: pg.Pool,
  topic: string,
  partitions: number,
): Promise<{ recorded: number; recordedAtMs: number }> {
  const { rows } = await pool.query<{ partitions: number; at_ms: number }>(
    `WITH ins AS (
       INSERT INTO command_topic_layout (topic, partitions) VALUES ($1, $2)
       ON CONFLICT (topic) DO NOTHING
       RETURNING partitions, recorded_at)
     SELECT partitions, floor(extract(epoch FROM recorded_at) * 1000)::float8 AS at_ms FROM ins
     UNION ALL
     SELECT partitions, floor(extract(epoch FROM recorded_at) * 1000)::float8 FROM command_topic_layout
     WHERE topic = $1 AND NOT EXISTS (SELECT 1 FROM ins)`,
    [topic, partitions],
  );
  return { recorded: rows[0]!.partitions, recordedAtMs: rows[0]!.at_ms };
}
