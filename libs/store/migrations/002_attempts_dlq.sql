-- 002: every attempt is a row; dead letters keep their full history; replays are audited.

CREATE TABLE attempt (
  attempt_id       uuid PRIMARY KEY,
  job_id           text        NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,
  attempt          integer     NOT NULL CHECK (attempt > 0),
  version          integer     NOT NULL,
  worker_id        text        NOT NULL,
  lease_generation bigint      NOT NULL,
  started_at       timestamptz NOT NULL DEFAULT now(),
  ended_at         timestamptz,
  outcome          text CHECK (outcome IN ('SUCCEEDED','FAILED','CANCELLED','TIMED_OUT','LEASE_LOST')),
  failure_class    text CHECK (failure_class IN ('TRANSIENT','THROTTLED','PERMANENT','UNKNOWN')),
  error            text,
  retry_at         timestamptz,
  -- A replay of a dead letter is an attempt too, linked to the replay that made it.
  replay_id        uuid
);
CREATE INDEX attempt_job_idx ON attempt (job_id, started_at);

CREATE TABLE dead_letter (
  job_id          text PRIMARY KEY REFERENCES job (job_id) ON DELETE CASCADE,
  queue           text        NOT NULL,
  tenant_id       text        NOT NULL,
  dead_at         timestamptz NOT NULL DEFAULT now(),
  failure_class   text,
  last_error      text,
  -- Same class + normalised error text: "failed the same way".
  fingerprint     text,
  attempts        integer     NOT NULL,
  replay_count    integer     NOT NULL DEFAULT 0,
  -- Replays in a row that died with the same fingerprint as before.
  same_failure_streak integer NOT NULL DEFAULT 0,
  quarantined     boolean     NOT NULL DEFAULT false,
  quarantine_note text,
  -- Set while a replay is in flight (the job is SCHEDULED again); cleared when it dies again.
  replayed_at     timestamptz
);
CREATE INDEX dead_letter_age_idx ON dead_letter (dead_at) WHERE replayed_at IS NULL;

CREATE TABLE audit_log (
  audit_id   uuid PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  actor      text        NOT NULL,
  action     text        NOT NULL,
  reason     text        NOT NULL CHECK (length(reason) > 0),
  subject    jsonb       NOT NULL,
  count      integer     NOT NULL CHECK (count >= 0)
);

-- Which payload schema (registry subject) a queue's jobs must match, for replay validation.
ALTER TABLE queue ADD COLUMN payload_subject text;
