import { randomUUID } from 'node:crypto';
import type pg from 'pg';

/** The region whose schedulers may own partitions, and its term. */
export interface HomeRegion {
  region: string;
  epoch: number;
  sinceMs: number;
}

/** A scheduler of another region (or of none) tried to take a partition: it must stand by. */
export class NotHomeRegionError extends Error {
  readonly code = 'SCHED_E_NOT_HOME_REGION';
  readonly retriable = false;
  constructor(
    readonly region: string | undefined,
    readonly home: string,
  ) {
    super(
      `the home region is ${home}; this scheduler's region is ${region ?? 'not set (SCHED_REGION)'}: it stands by`,
    );
    this.name = 'NotHomeRegionError';
  }
}

/** home_region_get: the home region, or undefined when none is set (any scheduler may own). */
export async function homeRegion(db: pg.Pool | pg.ClientBase): Promise<HomeRegion | undefined> {
  const { rows } = await db.query<{ region: string | null; epoch: string; since_ms: string }>(
    `SELECT region, epoch, (extract(epoch FROM since) * 1000)::bigint AS since_ms FROM home_region`,
  );
  const r = rows[0];
  return r?.region ? { region: r.region, epoch: Number(r.epoch), sinceMs: Number(r.since_ms) } : undefined;
}

/**
 * home_region_check: inside a partition claim's transaction, before its row lock. Holds the home
 * region row FOR SHARE until the claim commits, so a promotion (FOR UPDATE) waits for claims in
 * flight and a claim after it sees the new region. Throws NotHomeRegionError when a home region is
 * set and `region` is not it.
 */
export async function homeRegionCheck(client: pg.ClientBase, region: string | undefined): Promise<void> {
  const { rows } = await client.query<{ region: string | null }>('SELECT region FROM home_region FOR SHARE');
  const home = rows[0]?.region;
  if (home && home !== region) throw new NotHomeRegionError(region, home);
}

/**
 * region_promote: makes `region` the home region (a new term) and bumps every partition's epoch
 * in the same transaction. Promises: after it commits, no write of an owner from before it
 * succeeds (every fenced statement joins the epoch), and no scheduler of another region takes a
 * partition (`homeRegionCheck`). It waits for the owners' writes in flight (row locks) and for
 * claims in flight. Recorded in `audit_log` (action `region.promote`) in the same transaction.
 * Returns the new term, the region before and how many partitions were fenced.
 */
export async function regionPromote(
  pool: pg.Pool,
  region: string,
  by: { actor: string; reason: string },
): Promise<{ home: HomeRegion; before: string | null; fencedPartitions: number }> {
  if (region.trim() === '') throw new Error('region_promote: the region must not be empty');
  if (by.actor.trim() === '' || by.reason.trim() === '')
    throw new Error('region_promote: an actor and a reason are required (they go to the audit log)');
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const prev = await client.query<{ region: string | null }>('SELECT region FROM home_region FOR UPDATE');
    const before = prev.rows[0]?.region ?? null;
    // FOR UPDATE conflicts with the FOR KEY SHARE of every owner write: wait for those in flight.
    await client.query('SELECT 1 FROM partition_owner FOR UPDATE');
    await client.query('UPDATE home_region SET region = $1, epoch = epoch + 1, since = now()', [region]);
    const fenced = await client.query(
      `UPDATE partition_owner SET epoch = epoch + 1, owner_id = 'promoted:' || $1, since = now()`,
      [region],
    );
    const home = (await homeRegion(client))!;
    const fencedPartitions = fenced.rowCount ?? 0;
    await client.query(
      `INSERT INTO audit_log (audit_id, actor, action, reason, subject, count)
       VALUES ($1, $2, 'region.promote', $3, $4, $5)`,
      [
        randomUUID(),
        by.actor,
        by.reason,
        JSON.stringify({ region, before, term: home.epoch }),
        fencedPartitions,
      ],
    );
    await client.query('COMMIT');
    return { home, before, fencedPartitions };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
