import type pg from 'pg';

/** A tenant's quotas (migration 020); null: no limit. */
export interface TenantQuotas {
  maxPendingJobs: number | null;
  commandsPerSecond: number | null;
  /** Commands the bucket holds when full (default: one second's worth, at least 1). */
  commandBurst: number | null;
}

export interface TenantRow extends TenantQuotas {
  tenantId: string;
  createdAt: string;
  /** When it was disabled (null: enabled). */
  disabledAt: string | null;
}

const TENANT_COLUMNS = `tenant_id, created_at, max_pending_jobs, commands_per_second, command_burst, disabled_at`;

function tenantOf(r: {
  tenant_id: string;
  created_at: Date;
  max_pending_jobs: number | null;
  commands_per_second: number | null;
  command_burst: number | null;
  disabled_at: Date | null;
}): TenantRow {
  return {
    tenantId: r.tenant_id,
    createdAt: r.created_at.toISOString(),
    maxPendingJobs: r.max_pending_jobs,
    commandsPerSecond: r.commands_per_second,
    commandBurst: r.command_burst,
    disabledAt: r.disabled_at?.toISOString() ?? null,
  };
}

export async function tenantGet(
  pool: pg.Pool | pg.ClientBase,
  tenantId: string,
): Promise<TenantRow | undefined> {
  const { rows } = await pool.query(`SELECT ${TENANT_COLUMNS} FROM tenant WHERE tenant_id = $1`, [tenantId]);
  return rows[0] ? tenantOf(rows[0]) : undefined;
}

export async function tenantList(pool: pg.Pool | pg.ClientBase): Promise<TenantRow[]> {
  const { rows } = await pool.query(`SELECT ${TENANT_COLUMNS} FROM tenant ORDER BY tenant_id`);
  return rows.map(tenantOf);
}

/**
 * Creates the tenant or sets its quotas (every field given; null lifts a limit). Returns the row
 * and whether it was created.
 */
export async function tenantPut(
  pool: pg.Pool | pg.ClientBase,
  tenantId: string,
  q: TenantQuotas,
): Promise<{ tenant: TenantRow; created: boolean }> {
  const { rows } = await pool.query(
    `INSERT INTO tenant AS t (tenant_id, max_pending_jobs, commands_per_second, command_burst)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id) DO UPDATE SET max_pending_jobs = EXCLUDED.max_pending_jobs,
       commands_per_second = EXCLUDED.commands_per_second, command_burst = EXCLUDED.command_burst
     RETURNING ${TENANT_COLUMNS}, (xmax = 0) AS created`,
    [tenantId, q.maxPendingJobs, q.commandsPerSecond, q.commandBurst],
  );
  // A changed rate starts from a full bucket of the new size.
  await pool.query('DELETE FROM tenant_command_bucket WHERE tenant_id = $1', [tenantId]);
  return { tenant: tenantOf(rows[0]), created: rows[0].created === true };
}

/** The tenants with a pending cap, and the cap. */
export async function tenantPendingCaps(pool: pg.Pool | pg.ClientBase): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ tenant_id: string; cap: number }>(
    'SELECT tenant_id, max_pending_jobs AS cap FROM tenant WHERE max_pending_jobs IS NOT NULL',
  );
  return new Map(rows.map((r) => [r.tenant_id, r.cap]));
}

/**
 * Per tenant, its jobs not finished yet (SCHEDULED, DISPATCHED, RUNNING) over every partition. It
 * reads every pending and in-flight row of the table (no index leads with the tenant, so that the
 * create path maintains none): callers count now and then, spaced by what the count costs.
 */
export async function tenantPendingCounts(
  pool: pg.Pool | pg.ClientBase,
  tenants: readonly string[],
): Promise<Map<string, number>> {
  if (tenants.length === 0) return new Map();
  const { rows } = await pool.query<{ tenant_id: string; n: number }>({
    name: 'tenant_pending_counts',
    text: `SELECT tenant_id, count(*)::int AS n FROM job
           WHERE phase IN (0, 1) AND tenant_id = ANY($1::text[]) GROUP BY tenant_id`,
    values: [[...tenants]],
  });
  const out = new Map<string, number>(tenants.map((t) => [t, 0]));
  for (const r of rows) out.set(r.tenant_id, r.n);
  return out;
}

/** The bucket's size for a rate: the burst given, else one second's worth (at least one command). */
export function bucketSize(rate: number, burst: number | null): number {
  return burst ?? Math.max(1, Math.ceil(rate));
}

/**
 * Takes `n` commands from the tenant's bucket (fleet-wide: one row, refilled at `rate` a second up
 * to `burst`, updated in one statement under its row lock). Refused: nothing taken, and how long
 * until `n` would be there.
 */
export async function tenantCommandTake(
  pool: pg.Pool | pg.ClientBase,
  tenantId: string,
  n: number,
  rate: number,
  burst: number,
): Promise<{ ok: true } | { ok: false; retryAfterMs: number }> {
  const { rows } = await pool.query<{ ok: boolean; avail: number }>({
    name: 'tenant_command_take',
    text: `WITH cur AS (
             SELECT least($4::float8, b.tokens + extract(epoch FROM clock_timestamp() - b.at) * $3::float8) AS avail
             FROM tenant_command_bucket b WHERE b.tenant_id = $1 FOR UPDATE),
           taken AS (
             INSERT INTO tenant_command_bucket AS b (tenant_id, tokens, at)
             SELECT $1, coalesce((SELECT avail FROM cur), $4::float8) - $2, clock_timestamp()
             WHERE coalesce((SELECT avail FROM cur), $4::float8) >= $2
             ON CONFLICT (tenant_id) DO UPDATE SET tokens = EXCLUDED.tokens, at = EXCLUDED.at
             RETURNING 1)
           SELECT EXISTS (SELECT 1 FROM taken) AS ok, coalesce((SELECT avail FROM cur), $4::float8) AS avail`,
    values: [tenantId, n, rate, burst],
  });
  const r = rows[0]!;
  if (r.ok) return { ok: true };
  return { ok: false, retryAfterMs: Math.max(1, Math.ceil(((n - r.avail) / rate) * 1000)) };
}

export interface QueueRow {
  queue: string;
  createdAt: string;
  maxDispatchPerSecond: number | null;
  /** When an operator paused it (null: dispatching): its due jobs wait as due backlog. */
  pausedAt: string | null;
}

const QUEUE_COLUMNS = 'queue, created_at, max_dispatch_per_second, paused_at';

function queueOf(r: {
  queue: string;
  created_at: Date;
  max_dispatch_per_second: number | null;
  paused_at: Date | null;
}): QueueRow {
  return {
    queue: r.queue,
    createdAt: r.created_at.toISOString(),
    maxDispatchPerSecond: r.max_dispatch_per_second,
    pausedAt: r.paused_at?.toISOString() ?? null,
  };
}

export async function queueList(pool: pg.Pool | pg.ClientBase): Promise<QueueRow[]> {
  const { rows } = await pool.query(`SELECT ${QUEUE_COLUMNS} FROM queue ORDER BY queue`);
  return rows.map(queueOf);
}

export async function queueGet(pool: pg.Pool | pg.ClientBase, queue: string): Promise<QueueRow | undefined> {
  const { rows } = await pool.query(`SELECT ${QUEUE_COLUMNS} FROM queue WHERE queue = $1`, [queue]);
  return rows[0] ? queueOf(rows[0]) : undefined;
}

/** Creates the queue or sets its dispatch rate (null lifts it). */
export async function queuePut(
  pool: pg.Pool | pg.ClientBase,
  queue: string,
  maxDispatchPerSecond: number | null,
): Promise<{ queue: QueueRow; created: boolean }> {
  const { rows } = await pool.query(
    `INSERT INTO queue (queue, max_dispatch_per_second) VALUES ($1, $2)
     ON CONFLICT (queue) DO UPDATE SET max_dispatch_per_second = EXCLUDED.max_dispatch_per_second
     RETURNING ${QUEUE_COLUMNS}, (xmax = 0) AS created`,
    [queue, maxDispatchPerSecond],
  );
  return { queue: queueOf(rows[0]), created: rows[0].created === true };
}

/** Pauses or resumes a queue; undefined when there is no such queue. */
export async function queueSetPaused(
  pool: pg.Pool | pg.ClientBase,
  queue: string,
  paused: boolean,
): Promise<QueueRow | undefined> {
  const { rows } = await pool.query(
    `UPDATE queue SET paused_at = CASE WHEN $2 THEN coalesce(paused_at, now()) END WHERE queue = $1
     RETURNING ${QUEUE_COLUMNS}`,
    [queue, paused],
  );
  return rows[0] ? queueOf(rows[0]) : undefined;
}

/**
 * The queues with a dispatch rate, and the rate (jobs a second, fleet-wide); a paused queue's
 * rate is 0 (nothing is dispatched from it).
 */
export async function queueDispatchRates(pool: pg.Pool | pg.ClientBase): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ queue: string; rate: number }>(
    `SELECT queue, CASE WHEN paused_at IS NULL THEN max_dispatch_per_second ELSE 0 END AS rate
       FROM queue WHERE max_dispatch_per_second IS NOT NULL OR paused_at IS NOT NULL`,
  );
  return new Map(rows.map((r) => [r.queue, r.rate]));
}
