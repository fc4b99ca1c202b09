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

/** The permission `regionPromote` requires of its caller. */
export const REGION_PROMOTE_PERMISSION = 'region:promote';

/** A promotion refused: not permitted, or no actor or reason for the audit log. */
export class RegionPromoteError extends Error {
  readonly retriable = false;
  constructor(
    readonly code: 'SCHED_E_REGION_FORBIDDEN' | 'SCHED_E_REGION_INVALID',
    message: string,
  ) {
    super(message);
    this.name = 'RegionPromoteError';
  }
}

/**
 * region_promote: makes `region` the home region (a new term) and bumps every partition's epoch
 * in the same transaction. Promises: after it commits, no write of an owner from before it
 * succeeds (every fenced statement joins the epoch), and no scheduler of another region takes a
 * partition (`homeRegionCheck`). It waits for the owners' transactions in flight and for claims
 * in flight (the home region row, then the whole `partition_owner` table, locked in the order a
 * claim takes them: no deadlock with a claim, nor with a round that locks several partitions' rows
 * in any order). Recorded in `audit_log` (action `region.promote`) in the same transaction. The
 * region that is home already is left as it is (nothing fenced, `changed` false).
 */
export async function regionPromote(
  pool: pg.Pool,
  region: string,
  by: { actor: string; reason: string; permissions: readonly string[] },
): Promise<{ home: HomeRegion; before: string | null; fencedPartitions: number; changed: boolean }> {
  if (!by.permissions.includes(REGION_PROMOTE_PERMISSION))
    throw new RegionPromoteError(
      'SCHED_E_REGION_FORBIDDEN',
      `promoting a region needs ${REGION_PROMOTE_PERMISSION}`,
    );
  if (region.trim() === '')
    throw new RegionPromoteError('SCHED_E_REGION_INVALID', 'the region must not be empty');
  if (by.actor.trim() === '' || by.reason.trim() === '')
    throw new RegionPromoteError(
      'SCHED_E_REGION_INVALID',
      'an actor and a reason are required (they go to the audit log)',
    );
  return regionSet(pool, region, by, 'region.promote', false);
}

/**
 * region_claim_unset: a scheduler with a region that finds no home region set makes its own the
 * home region (the first region to start; audited as `region.claim`), so that a second region
 * started later stands by instead of contending for the partitions. Returns the home region.
 */
export async function regionClaimUnset(pool: pg.Pool, region: string, ownerId: string): Promise<HomeRegion> {
  const r = await regionSet(
    pool,
    region,
    { actor: ownerId, reason: 'the first region to start' },
    'region.claim',
    true,
  );
  return r.home;
}

async function regionSet(
  pool: pg.Pool,
  region: string,
  by: { actor: string; reason: string },
  action: string,
  onlyIfUnset: boolean,
): Promise<{ home: HomeRegion; before: string | null; fencedPartitions: number; changed: boolean }> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const prev = await client.query<{ region: string | null }>('SELECT region FROM home_region FOR UPDATE');
    const before = prev.rows[0]?.region ?? null;
    if (before === region || (onlyIfUnset && before !== null)) {
      await client.query('COMMIT');
      return { home: (await homeRegion(pool))!, before, fencedPartitions: 0, changed: false };
    }
    // Conflicts with the row locks of every owner write (FOR KEY SHARE) and claim: waits for
    // those in flight, and queues those after it.
    await client.query('LOCK TABLE partition_owner IN EXCLUSIVE MODE');
    await client.query('UPDATE home_region SET region = $1, epoch = epoch + 1, since = now()', [region]);
    const fenced = await client.query(
      `UPDATE partition_owner SET epoch = epoch + 1, owner_id = 'promoted:' || $1, since = now()`,
      [region],
    );
    const home = (await homeRegion(client))!;
    const fencedPartitions = fenced.rowCount ?? 0;
    await client.query(
      `INSERT INTO audit_log (audit_id, actor, action, reason, subject, count)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        randomUUID(),
        by.actor,
        action,
        by.reason,
        JSON.stringify({ region, before, term: home.epoch }),
        fencedPartitions,
      ],
    );
    await client.query('COMMIT');
    return { home, before, fencedPartitions, changed: true };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
