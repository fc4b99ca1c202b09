-- 020: quotas the platform enforces, per tenant and per queue (NULL: no limit).
--
--   * tenant.max_pending_jobs: the most jobs of the tenant not finished yet (SCHEDULED, DISPATCHED,
--     RUNNING). A CreateJob beyond it is rejected QUOTA_EXCEEDED by the scheduler (whatever the
--     path: the API or the command topic), and the API answers 429 at the door when it can see it.
--   * tenant.commands_per_second / command_burst: the tenant's command rate at the API, fleet-wide
--     (a token bucket in tenant_command_bucket, one row per tenant, taken by every API instance).
--   * queue.max_dispatch_per_second: the queue's dispatch rate, fleet-wide (each scheduler its share
--     by owned partitions); due jobs beyond it wait SCHEDULED as due backlog.
-- Catalog changes only (nullable columns without defaults: no rewrite).
ALTER TABLE tenant
  ADD COLUMN max_pending_jobs integer CHECK (max_pending_jobs IS NULL OR max_pending_jobs >= 0),
  ADD COLUMN commands_per_second double precision
    CHECK (commands_per_second IS NULL OR commands_per_second > 0),
  ADD COLUMN command_burst integer CHECK (command_burst IS NULL OR command_burst > 0);
ALTER TABLE queue
  ADD COLUMN max_dispatch_per_second double precision
    CHECK (max_dispatch_per_second IS NULL OR max_dispatch_per_second > 0);

CREATE TABLE tenant_command_bucket (
  tenant_id text PRIMARY KEY REFERENCES tenant (tenant_id) ON DELETE CASCADE,
  tokens    double precision NOT NULL,
  at        timestamptz      NOT NULL
);
