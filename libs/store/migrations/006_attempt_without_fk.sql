-- 006: attempt rows no longer carry a foreign key to job. Every attempt row is inserted by the
-- statement that has just locked and updated its job row (a lease start), so the key can only hold;
-- checking it cost every start a referential-integrity trigger (a query of its own and a row-lock
-- record in the WAL). Pruning a job now deletes its attempts in the same statement (retention.ts)
-- instead of by ON DELETE CASCADE.
ALTER TABLE attempt DROP CONSTRAINT IF EXISTS attempt_job_id_fkey;
