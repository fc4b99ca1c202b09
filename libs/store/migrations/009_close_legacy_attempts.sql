-- 009: attempt rows that versions before 008 left open.
--
-- Before 008 a start inserted its attempt row and the attempt's end updated it, except when the
-- lease reaper took the job back: that row stayed open (no end, no outcome) for good. Such a row
-- belongs to an attempt its job has moved on from (the job is not RUNNING under the row's lease
-- generation): it is closed here as LEASE_LOST, its end time left unknown. Rows of attempts still
-- running under their generation are left to their worker, or to the reaper, which since 009 closes
-- the open attempt row of the lease it takes back.
UPDATE attempt a
SET outcome = 'LEASE_LOST',
    error = 'lease lost before migration 009 (end time not recorded)'
FROM job j
WHERE a.ended_at IS NULL
  AND a.outcome IS NULL
  AND j.job_id = a.job_id
  AND NOT (j.state = 'RUNNING' AND j.lease_generation = a.lease_generation);
