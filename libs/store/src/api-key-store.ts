import type pg from 'pg';

export interface ApiKeyRow {
  keyId: string;
  callerId: string;
  tenantId: string;
  permissions: string[];
  createdAt: string;
  revokedAt: string | null;
}

const COLUMNS = 'key_id, caller_id, tenant_id, permissions, created_at, revoked_at';

function rowOf(r: {
  key_id: string;
  caller_id: string;
  tenant_id: string;
  permissions: string[];
  created_at: Date;
  revoked_at: Date | null;
}): ApiKeyRow {
  return {
    keyId: r.key_id,
    callerId: r.caller_id,
    tenantId: r.tenant_id,
    permissions: r.permissions,
    createdAt: r.created_at.toISOString(),
    revokedAt: r.revoked_at?.toISOString() ?? null,
  };
}

/** Stores a key issued by the API, by its digest. */
export async function apiKeyInsert(
  pool: pg.Pool | pg.ClientBase,
  k: { keyId: string; digest: string; callerId: string; tenantId: string; permissions: readonly string[] },
): Promise<ApiKeyRow> {
  const { rows } = await pool.query(
    `INSERT INTO api_key (key_id, digest, caller_id, tenant_id, permissions) VALUES ($1, $2, $3, $4, $5)
     RETURNING ${COLUMNS}`,
    [k.keyId, k.digest, k.callerId, k.tenantId, [...k.permissions]],
  );
  return rowOf(rows[0]);
}

/** The caller of a key not revoked, by digest, with whether its tenant is enabled. */
export async function apiKeyByDigest(
  pool: pg.Pool | pg.ClientBase,
  digest: string,
): Promise<(ApiKeyRow & { tenantDisabled: boolean }) | undefined> {
  const { rows } = await pool.query({
    name: 'api_key_by_digest',
    text: `SELECT k.key_id, k.caller_id, k.tenant_id, k.permissions, k.created_at, k.revoked_at,
                  t.disabled_at IS NOT NULL AS tenant_disabled
           FROM api_key k JOIN tenant t USING (tenant_id)
           WHERE k.digest = $1 AND k.revoked_at IS NULL`,
    values: [digest],
  });
  return rows[0] ? { ...rowOf(rows[0]), tenantDisabled: rows[0].tenant_disabled === true } : undefined;
}

export async function apiKeyList(pool: pg.Pool | pg.ClientBase, tenantId: string): Promise<ApiKeyRow[]> {
  const { rows } = await pool.query(
    `SELECT ${COLUMNS} FROM api_key WHERE tenant_id = $1 ORDER BY created_at`,
    [tenantId],
  );
  return rows.map(rowOf);
}

/** Revokes a key of the tenant; undefined when it has no such key. */
export async function apiKeyRevoke(
  pool: pg.Pool | pg.ClientBase,
  tenantId: string,
  keyId: string,
): Promise<ApiKeyRow | undefined> {
  const { rows } = await pool.query(
    `UPDATE api_key SET revoked_at = coalesce(revoked_at, now()) WHERE tenant_id = $1 AND key_id = $2
     RETURNING ${COLUMNS}`,
    [tenantId, keyId],
  );
  return rows[0] ? rowOf(rows[0]) : undefined;
}

/** Disables or enables a tenant; false when it does not exist. */
export async function tenantSetDisabled(
  pool: pg.Pool | pg.ClientBase,
  tenantId: string,
  disabled: boolean,
): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE tenant SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, now()) END WHERE tenant_id = $1`,
    [tenantId, disabled],
  );
  return (rowCount ?? 0) > 0;
}
