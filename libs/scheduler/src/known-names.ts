import type pg from 'pg';
import type { KnownNames } from '@sched/command-rules';

/**
 * Tenants and queues from Postgres, refreshed periodically, and on demand (`refresh`, at most every
 * `minRefreshMs`) when a command names one not seen yet: a tenant or queue created through the API
 * (`PUT /v1/tenants/:id`, `PUT /v1/queues/:queue`) is accepted at once, without a restart.
 */
export async function knownNamesFromDb(
  pool: pg.Pool,
  refreshMs = 5_000,
  minRefreshMs = 200,
): Promise<KnownNames & { close(): void }> {
  let queues = new Set<string>();
  let tenants = new Set<string>();
  let loadedAt = 0;
  let loading: Promise<void> | null = null;
  const load = async () => {
    loadedAt = Date.now();
    const q = await pool.query<{ queue: string }>('SELECT queue FROM queue');
    // A disabled tenant is as unknown (UNKNOWN_TENANT: "does not exist or is disabled").
    const t = await pool.query<{ tenant_id: string }>(
      'SELECT tenant_id FROM tenant WHERE disabled_at IS NULL',
    );
    queues = new Set(q.rows.map((r) => r.queue));
    tenants = new Set(t.rows.map((r) => r.tenant_id));
  };
  await load();
  const timer = setInterval(() => void load().catch(() => undefined), refreshMs);
  timer.unref();
  return {
    hasQueue: (q) => queues.has(q),
    hasTenant: (t) => tenants.has(t),
    refresh: async () => {
      if (Date.now() - loadedAt < minRefreshMs) return loading ?? undefined;
      loading = load().finally(() => (loading = null));
      return loading;
    },
    close: () => clearInterval(timer),
  };
}
