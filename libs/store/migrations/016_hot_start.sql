-- 016: a worker's start (DISPATCHED -> RUNNING) and its heartbeats are HOT updates.
--
-- Until here every index on `job` named `state` in its predicate, and job_lease_idx was keyed on
-- `lease_until`: the start changes both, so Postgres wrote a new entry in the primary key and in
-- job_lease_idx for every start and every heartbeat, and the logical decoder (the walsender Debezium
-- reads from) decoded each of those WAL records, one syscall a record on this project's VM. Measured
-- with bench/lab/hot-transitions (100,000 jobs through claim, start and success): 12.2 WAL records a
-- job, no HOT update; with the layout below, 9.7 records a job at fillfactor 75 and 52 % of the
-- starts HOT (7.7 and 88 % at fillfactor 50).
--
--   * `phase`, a stored generated column the indexes filter on instead of `state`: 0 pending
--     (SCHEDULED), 1 in flight (DISPATCHED and RUNNING alike, so the start does not change it),
--     2 finished and prunable (SUCCEEDED, CANCELLED, EXPIRED), 3 DEAD. A query that wants one of
--     these indexes says `phase = N` beside its `state` condition.
--   * `lease_check_at`, when the lease reaper next looks at an in-flight job, keys job_lease_idx
--     instead of `lease_until`. A claim sets it (no later than 30 s after the claim, the first
--     check); the start and heartbeats leave it; the reaper, finding a job whose lease still runs,
--     moves it to the lease's end (one index write per lease period for a job that outlives its
--     first check, instead of one per heartbeat). A lapsed lease is found at its end plus the skew
--     margin as before, or at the first check if that comes later (a worker lease shorter than
--     30 s on a worker whose liveness row is off; a gone worker process is found by its liveness
--     row, migration 013, within seconds either way).
--   * fillfactor 75: the room on a job's page that lets the start's new row version stay on it.
--     100 made 1 % of the starts HOT (test/src/store-hot-start.test.ts), 75 52 %, 50 90 % (the lab:
--     88 %, 7.7 WAL records a job against 9.7 at 75); but a pending job takes up to 1/fillfactor
--     the space, and 50 did not make a 100k burst measurably faster (seven runs each way): 75 is the
--     trade (a third more space for a pending job). Per table, so an operator may change it:
--     ALTER TABLE job SET (fillfactor = N) applies to pages written after it.
--
-- ADD COLUMN ... STORED rewrites the table (an ACCESS EXCLUSIVE lock for the time of a rewrite: a
-- few seconds per million jobs on this machine), and the rewrite packs it to the new fillfactor.
ALTER TABLE job SET (fillfactor = 75);
ALTER TABLE job ADD COLUMN phase smallint GENERATED ALWAYS AS (
  CASE WHEN state = 'SCHEDULED' THEN 0
       WHEN state IN ('DISPATCHED', 'RUNNING') THEN 1
       WHEN state IN ('SUCCEEDED', 'CANCELLED', 'EXPIRED') THEN 2
       ELSE 3 END) STORED;
ALTER TABLE job ADD COLUMN lease_check_at timestamptz;
UPDATE job SET lease_check_at = lease_until WHERE state IN ('DISPATCHED', 'RUNNING');
-- A claim by a scheduler older than this migration (during a rolling upgrade) sets no check time:
-- job_lease_idx then keys the job on its dispatch time, so the reaper's next pass looks at it and
-- gives it one. An in-flight job with neither could never be found, and is refused.
ALTER TABLE job ADD CONSTRAINT job_lease_check_set
  CHECK (phase <> 1 OR coalesce(lease_check_at, dispatched_at) IS NOT NULL);

DROP INDEX job_due_idx;
CREATE INDEX job_due_idx ON job (partition, due_at) WHERE phase = 0;
DROP INDEX job_lease_idx;
CREATE INDEX job_lease_idx ON job (partition, (coalesce(lease_check_at, dispatched_at))) WHERE phase = 1;
DROP INDEX job_finished_idx;
CREATE INDEX job_finished_idx ON job (finished_at) WHERE phase = 2;
