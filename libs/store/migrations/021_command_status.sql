-- 021: a status for every command (GET /v1/commands/:commandId).
--
-- command_applied held the ids of the commands applied (for idempotence), creates excepted. It now
-- holds every command the scheduler has decided on, creates included, with what became of it:
-- `applied` (it changed something), `no-op` (with why: already cancelled, not found, a stale
-- version, ...) or `rejected` (with the reason code and message, as on sched.commands.rejected).
-- Rows from before this migration read as applied. command_issued holds the commands the API sent,
-- so that one not decided on yet answers `pending` instead of unknown. Both are pruned by age
-- (SCHED_COMMAND_DEDUP_RETENTION_MS). Catalog changes only (constant default: no rewrite).
ALTER TABLE command_applied
  ADD COLUMN tenant_id text,
  ADD COLUMN kind      text,
  ADD COLUMN entity_id text,
  ADD COLUMN outcome   text NOT NULL DEFAULT 'applied' CHECK (outcome IN ('applied', 'no-op', 'rejected')),
  ADD COLUMN detail    text;

CREATE TABLE command_issued (
  command_id text PRIMARY KEY,
  tenant_id  text        NOT NULL,
  kind       text        NOT NULL,
  entity_id  text,
  caller_id  text,
  issued_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX command_issued_age_idx ON command_issued (issued_at);
