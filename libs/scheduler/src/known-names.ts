import type pg from 'pg';
import type { KnownNames } from './command-validation.js';

/**
 * Tenants and queues from Postgres, refreshed periodically so a queue registered by the API is
 * accepted within `refreshMs` without a restart.
 */
export async function knownNamesFromDb(
  pool: pg.Pool,
  refreshMs = 5_000,
): Promise<KnownNames & { close(): void }> {
  let queues = new Set<string>();
  let tenants = new Set<string>();
  const load = async () => {
    const q = await pool.query<{ queue: string }>('SELECT queue FROM queue');
    const t = await pool.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant');
    queues = new Set(q.rows.map((r) => r.queue));
    tenants = new Set(t.rows.map((r) => r.tenant_id));
  };
  await load();
  const timer = setInterval(() => void load().catch(() => undefined), refreshMs);
  timer.unref();
  return {
    hasQueue: (q) => queues.has(q),
    hasTenant: (t) => tenants.has(t),
    close: () => clearInterval(timer),
  };
}
