-- 019: queue.retry_policy is removed: it was stored and never read. A queue's retry policy is its
-- handler's (`worker.handle(queue, fn, { retryPolicy })`), a job's its CreateJob.retryPolicy and
-- maxAttempts, and the reaper's budget SCHED_DEFAULT_MAX_ATTEMPTS. Dropping a column is a catalog
-- change (no rewrite).
ALTER TABLE queue DROP COLUMN IF EXISTS retry_policy;
