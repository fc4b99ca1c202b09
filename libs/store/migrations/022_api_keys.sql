-- 022: tenants administered through the API: keys it issues and revokes, and a tenant disabled.
--
-- api_key holds a key's SHA-256 digest (`sha256:<hex>`, the form SCHED_API_KEYS accepts), never the
-- key: the key is shown once, when it is issued. A revoked key stops working within the API's
-- cache time (a few seconds). SCHED_API_KEYS stays for bootstrapping the first admin key.
-- tenant.disabled_at: a disabled tenant's callers are refused by the API (403) and its commands
-- rejected UNKNOWN_TENANT by the scheduler ("does not exist or is disabled"); its rows stay.
-- queue.paused_at: an operator's pause; the scheduler dispatches none of its jobs (they wait as due
-- backlog, SCHEDULED) until it is resumed.
CREATE TABLE api_key (
  key_id      text PRIMARY KEY,
  digest      text        NOT NULL UNIQUE CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
  caller_id   text        NOT NULL CHECK (length(caller_id) BETWEEN 1 AND 200),
  tenant_id   text        NOT NULL REFERENCES tenant (tenant_id),
  permissions text[]      NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_key_tenant_idx ON api_key (tenant_id);
ALTER TABLE tenant ADD COLUMN disabled_at timestamptz;
ALTER TABLE queue ADD COLUMN paused_at timestamptz;
