-- 007: outbox rows no longer carry a primary key. Nothing looks an outbox row up by its id: Debezium
-- reads the inserts from the WAL (the publication publishes inserts only, which need no replica
-- identity), and the prune finds old rows by outbox_age_idx and deletes them by ctid. The key's
-- index took an insert at a random place for every dispatch, inside the claim transaction: about a
-- third of the cost of an outbox insert (200,000 rows: 10.3-11.6 µs a row with it, 7.3-7.8 without).
-- The event id is still in every row and on every record (a random UUID made by the scheduler).
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_pkey;
