-- 001: the scheduler's source of truth. Unqualified names: the migrator sets search_path
-- to the target schema, so every schema (tests use one each) gets its own copy.

-- Shard ownership. One row per command-topic partition; `epoch` is the fencing token.
-- Every write an owner makes joins this row with (partition, epoch) in the same statement,
-- holding it FOR SHARE, so a bump (FOR UPDATE) waits for in-flight owner writes and later
-- writes of a stale owner match nothing.
CREATE TABLE partition_owner (
  partition      integer PRIMARY KEY CHECK (partition >= 0),
  owner_id       text        NOT NULL,
  epoch          bigint      NOT NULL CHECK (epoch > 0),
  since          timestamptz NOT NULL DEFAULT now(),
  applied_offset bigint      NOT NULL DEFAULT -1
);

-- Commands already applied, for idempotent apply by commandId (producer retries,
-- redelivery after a crash before the offset commit). Pruned by age.
CREATE TABLE command_applied (
  command_id text PRIMARY KEY,
  partition  integer     NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX command_applied_age_idx ON command_applied (applied_at);

CREATE TABLE job (
  job_id               text PRIMARY KEY CHECK (length(job_id) BETWEEN 1 AND 200),
  partition            integer     NOT NULL,
  tenant_id            text        NOT NULL,
  queue                text        NOT NULL,
  state                text        NOT NULL CHECK (state IN
                         ('SCHEDULED','DISPATCHED','RUNNING','SUCCEEDED','CANCELLED','DEAD','EXPIRED')),
  -- Bumped by cancel and reschedule: a dispatch of an older version is refused at execution.
  version              integer     NOT NULL DEFAULT 1 CHECK (version > 0),
  -- Attempts started so far (a claim counts one).
  attempt              integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  due_at               timestamptz NOT NULL,
  priority             integer     NOT NULL DEFAULT 0,
  payload              bytea       NOT NULL,
  business_key         text,
  max_attempts         integer     CHECK (max_attempts IS NULL OR max_attempts > 0),
  retry_policy         jsonb,
  expires_at           timestamptz,
  execution_timeout_ms bigint      CHECK (execution_timeout_ms IS NULL OR execution_timeout_ms > 0),
  headers              jsonb,
  schedule_id          text,
  occurrence_at        timestamptz,
  -- Lease (worker side): fenced by owner + generation.
  lease_owner          text,
  lease_generation     bigint      NOT NULL DEFAULT 0,
  lease_until          timestamptz,
  checkpoint           jsonb,
  -- The partition epoch that made the last claim (forensics).
  claim_epoch          bigint,
  created_at           timestamptz NOT NULL DEFAULT now(),
  dispatched_at        timestamptz,
  finished_at          timestamptz,
  CHECK (state NOT IN ('DISPATCHED','RUNNING') OR lease_until IS NOT NULL)
);
-- "Next bounded batch due by T" for one partition: only pending rows are indexed.
CREATE INDEX job_due_idx ON job (partition, due_at) WHERE state = 'SCHEDULED';
-- The lease reaper's scan.
CREATE INDEX job_lease_idx ON job (partition, lease_until) WHERE state IN ('DISPATCHED','RUNNING');

-- Transactional outbox, streamed by Debezium (EventRouter) and pruned by age.
-- aggregatetype routes: 'dispatch.<queue>' -> sched.dispatch.<queue>, 'events' -> sched.events.
CREATE TABLE outbox (
  id            uuid        PRIMARY KEY,
  aggregatetype text        NOT NULL,
  aggregateid   text        NOT NULL,
  type          text        NOT NULL,
  payload       bytea       NOT NULL,
  job_id        text,
  version       integer,
  attempt       integer,
  epoch         bigint,
  tenant_id     text,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_age_idx ON outbox (created_at);

-- Tenants and queues a command may name; anything else is rejected with a reason.
CREATE TABLE tenant (
  tenant_id  text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE queue (
  queue        text PRIMARY KEY CHECK (queue ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
  retry_policy jsonb,
  created_at   timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tenant (tenant_id) VALUES ('default');
INSERT INTO queue (queue) VALUES ('default');
