-- 008: the current attempt lives on the job row; the attempt table holds the attempts that ended
-- any other way than success, each written once, when it ends.
--
-- Before, a start inserted the attempt row and its completion updated it: two of the seven row
-- writes a job cost Postgres end to end (create, claim, outbox, start, attempt, completion,
-- attempt; a create writes no command-id row). The running attempt's id and start time now go on the job row, in the
-- start's own update, which writes that row anyway; a success leaves them there with the worker's
-- id (lease_owner is no longer cleared on success) and writes no attempt row. A failure, timeout,
-- cancellation or lost lease inserts its attempt row at the end (the reaper writes the row of an
-- attempt whose worker went silent). Nothing is lost: attempt_history shows both, one row per
-- attempt, as the attempt table used to. A job's attempt_id and started_at are NULL until it starts.
ALTER TABLE job ADD COLUMN attempt_id uuid;
ALTER TABLE job ADD COLUMN started_at timestamptz;

-- Rows are now inserted complete and never updated: no room needed for HOT updates (004).
ALTER TABLE attempt SET (fillfactor = 100);

-- Every attempt, ended or not: the attempt table, plus the job's own attempt where it has no row
-- (running, succeeded, or never closed by its worker). Read it with `WHERE job_id = …`: both sides
-- are then looked up by key.
CREATE VIEW attempt_history AS
  SELECT attempt_id, job_id, attempt, version, worker_id, lease_generation, started_at, ended_at, outcome,
         failure_class, error, retry_at, replay_id
  FROM attempt
  UNION ALL
  SELECT j.attempt_id, j.job_id, j.attempt, j.version, j.lease_owner, j.lease_generation, j.started_at,
         CASE WHEN j.state = 'SUCCEEDED' THEN j.finished_at END,
         CASE WHEN j.state = 'SUCCEEDED' THEN 'SUCCEEDED' END,
         NULL, NULL, NULL, NULL
  FROM job j
  WHERE j.attempt_id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM attempt a WHERE a.attempt_id = j.attempt_id);
