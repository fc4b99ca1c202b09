-- 017: a dispatch that lapses before any worker started it no longer spends an attempt.
--
-- The claim counts an attempt (attempt + 1) when it dispatches; the lease reaper, taking back a
-- dispatch no worker started (a queue without workers, workers too busy), now gives that attempt
-- back and counts the lapse here instead, so a job that never ran keeps its whole retry budget
-- (a capacity problem, not a poison job). The two are budgeted apart: attempts that started by
-- max_attempts (or the default), lapses of never-started dispatches by the scheduler's
-- SCHED_MAX_UNSTARTED_DISPATCHES. A constant default: no table rewrite.
ALTER TABLE job ADD COLUMN lapsed_dispatches integer NOT NULL DEFAULT 0;
