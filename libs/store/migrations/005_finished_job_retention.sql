-- 005: finished jobs can be pruned after a retention (SCHED_FINISHED_JOB_RETENTION_MS). The prune
-- finds them by this index, which holds only finished rows: a table with ten million pending jobs
-- is not walked to find the few thousand that ended a week ago. DEAD jobs are not in it: they stay
-- until their dead letter is dealt with. One more index entry per finished job, written by the
-- completion's update (which is not HOT anyway: its state changes).
CREATE INDEX job_finished_idx ON job (finished_at) WHERE state IN ('SUCCEEDED', 'CANCELLED', 'EXPIRED');
