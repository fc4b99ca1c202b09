-- 013: worker liveness. One row per worker id, beaten by the worker every few seconds (one write
-- per process, not per job). The reaper takes a RUNNING job back as soon as its lease owner's row
-- says the process is gone, instead of waiting for the job's own lease (30 s by default):
--   * `alive_until` has passed (the process stopped beating: killed, host lost, frozen past it), or
--   * the job started before `started_at`: a new process took over the worker id (a restarted pod
--     keeps its name), so whatever the old process had running is orphaned.
-- Both are judged on the database clock. The job's lease stays the fence: a process that comes back
-- finds its lease gone and its completion refused, as with an expired lease.
CREATE TABLE worker_liveness (
  worker_id   text        PRIMARY KEY CHECK (worker_id <> ''),
  -- The process beating now; a new one under the same id replaces it (and moves started_at).
  incarnation uuid        NOT NULL,
  started_at  timestamptz NOT NULL,
  beat_at     timestamptz NOT NULL,
  alive_until timestamptz NOT NULL,
  -- When an incarnation last replaced another (NULL: never).
  replaced_at timestamptz
);
CREATE INDEX worker_liveness_until_idx ON worker_liveness (alive_until);
