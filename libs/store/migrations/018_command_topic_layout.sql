-- 018: the command topic's partition count, as the jobs were placed.
--
-- A job lives in the partition its key hashed to when it was created (`job.partition`), and every
-- command for it is applied by that partition's owner. Partitions added to the command topic later
-- send new commands for existing jobs to other partitions (the hash modulo the new count), whose
-- owners find no such job: cancels and reschedules would be lost without a word. The scheduler
-- records the count at its first start and refuses to start when the topic's count differs.
CREATE TABLE command_topic_layout (
  topic       text        PRIMARY KEY,
  partitions  integer     NOT NULL CHECK (partitions > 0),
  recorded_at timestamptz NOT NULL DEFAULT now()
);
