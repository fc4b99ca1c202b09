-- 003: recurring schedules and the occurrence ledger.

CREATE TABLE schedule (
  schedule_id          text PRIMARY KEY CHECK (length(schedule_id) BETWEEN 1 AND 150),
  partition            integer     NOT NULL,
  tenant_id            text        NOT NULL,
  queue                text        NOT NULL,
  -- Job template.
  payload              bytea       NOT NULL,
  priority             integer     NOT NULL DEFAULT 0,
  headers              jsonb,
  max_attempts         integer,
  execution_timeout_ms bigint,
  retry_policy         jsonb,
  -- Recurrence: exactly one of cron / interval_ms, evaluated in time_zone.
  cron                 text,
  interval_ms          bigint CHECK (interval_ms IS NULL OR interval_ms >= 1000),
  time_zone            text        NOT NULL,
  start_at             timestamptz,
  end_at               timestamptz,
  max_runs             integer CHECK (max_runs IS NULL OR max_runs > 0),
  runs                 integer     NOT NULL DEFAULT 0,
  -- Nominal time of the next occurrence not yet handled; NULL once the schedule is exhausted.
  next_fire_at         timestamptz,
  misfire_policy       text        NOT NULL CHECK (misfire_policy IN ('FIRE_ONCE','FIRE_ALL','SKIP')),
  misfire_fire_all_cap integer     NOT NULL DEFAULT 100 CHECK (misfire_fire_all_cap > 0),
  misfire_deadline_ms  bigint,
  overlap_policy       text        NOT NULL CHECK (overlap_policy IN ('ALLOW','SKIP','BUFFER_ONE','CANCEL_PREVIOUS')),
  dst_skipped_policy   text        NOT NULL CHECK (dst_skipped_policy IN ('SHIFT','SKIP')),
  dst_repeated_policy  text        NOT NULL CHECK (dst_repeated_policy IN ('FIRST','LAST','BOTH')),
  jitter_window_ms     bigint      NOT NULL DEFAULT 0 CHECK (jitter_window_ms >= 0),
  state                text        NOT NULL DEFAULT 'ACTIVE' CHECK (state IN ('ACTIVE','PAUSED','DELETED','COMPLETED')),
  -- BUFFER_ONE: the one occurrence held back while the previous run is still going.
  buffered_at          timestamptz,
  -- Job id of the latest fired occurrence (overlap checks).
  last_job_id          text,
  version              integer     NOT NULL DEFAULT 1,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CHECK ((cron IS NULL) <> (interval_ms IS NULL)),
  CHECK (end_at IS NULL OR start_at IS NULL OR end_at > start_at)
);
CREATE INDEX schedule_due_idx ON schedule (partition, next_fire_at) WHERE state = 'ACTIVE';

-- Every nominal occurrence gets a row and a fate. The key is the idempotency of generation:
-- (schedule_id, nominal_at) can be recorded once, whatever retries or failovers replay.
CREATE TABLE occurrence (
  schedule_id   text        NOT NULL,
  nominal_at    timestamptz NOT NULL,
  occurrence_id text        NOT NULL UNIQUE,
  fate          text        NOT NULL CHECK (fate IN
                  ('FIRED','DST_SHIFTED','SKIPPED','MISSED','COALESCED','DST_SKIPPED','PAUSED','EXPIRED','BUFFERED')),
  job_id        text,
  local_wall    text,
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  detail        text,
  PRIMARY KEY (schedule_id, nominal_at)
);
