-- Lab for the job row's transitions (claim, start, success) and the WAL they write: three copies of
-- a job table in scratch schemas, 100,000 jobs each. Run by run.sh against the local stack; it drops
-- what it made. Not a migration: a measurement for a schema change not made yet (README, Limits).
--   lab_a: the indexes of `job` today (partial indexes whose predicates name `state`), fillfactor 100.
--   lab_b, lab_c: `phase`, a stored generated column that the start does not change (DISPATCHED and
--   RUNNING are both 1), in the predicates instead of `state`; the in-flight index keyed on
--   dispatched_at (which the start does not change) instead of lease_until; fillfactor 75 and 50.
DROP SCHEMA IF EXISTS lab_a CASCADE;
DROP SCHEMA IF EXISTS lab_b CASCADE;
DROP SCHEMA IF EXISTS lab_c CASCADE;
CREATE SCHEMA lab_a;
CREATE SCHEMA lab_b;
CREATE SCHEMA lab_c;
CREATE TABLE lab_a.job (job_id text PRIMARY KEY, partition int NOT NULL, tenant_id text NOT NULL, queue text NOT NULL,
  state text NOT NULL, version int NOT NULL DEFAULT 1, attempt int NOT NULL DEFAULT 0, due_at timestamptz NOT NULL,
  priority int NOT NULL DEFAULT 0, payload bytea NOT NULL, lease_owner text, lease_generation bigint NOT NULL DEFAULT 0,
  lease_until timestamptz, claim_epoch bigint, created_at timestamptz NOT NULL DEFAULT now(), dispatched_at timestamptz,
  finished_at timestamptz, attempt_id uuid, started_at timestamptz);
CREATE INDEX ON lab_a.job (partition, due_at) WHERE state = 'SCHEDULED';
CREATE INDEX ON lab_a.job (partition, lease_until) WHERE state IN ('DISPATCHED', 'RUNNING');
CREATE INDEX ON lab_a.job (finished_at) WHERE state IN ('SUCCEEDED', 'CANCELLED', 'EXPIRED');
CREATE TABLE lab_b.job (LIKE lab_a.job INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
CREATE TABLE lab_c.job (LIKE lab_a.job INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
DO $$
DECLARE s text;
BEGIN
  FOREACH s IN ARRAY ARRAY['lab_b', 'lab_c'] LOOP
    EXECUTE format('ALTER TABLE %I.job ADD PRIMARY KEY (job_id)', s);
    EXECUTE format($q$ALTER TABLE %I.job ADD COLUMN phase smallint GENERATED ALWAYS AS (CASE WHEN state = 'SCHEDULED' THEN 0
      WHEN state IN ('DISPATCHED', 'RUNNING') THEN 1 WHEN state IN ('SUCCEEDED', 'CANCELLED', 'EXPIRED') THEN 2 ELSE 3 END) STORED$q$, s);
    EXECUTE format('ALTER TABLE %I.job SET (fillfactor = %s)', s, CASE s WHEN 'lab_b' THEN 75 ELSE 50 END);
    EXECUTE format('CREATE INDEX ON %I.job (partition, due_at) WHERE phase = 0', s);
    EXECUTE format('CREATE INDEX ON %I.job (partition, dispatched_at) WHERE phase = 1', s);
    EXECUTE format('CREATE INDEX ON %I.job (finished_at) WHERE phase = 2', s);
  END LOOP;
END $$;

-- One phase of the lifecycle over jobs 1..n in batches of bs, a transaction per batch.
CREATE OR REPLACE PROCEDURE lab_run(s text, ph text, n int, bs int) LANGUAGE plpgsql AS $$
DECLARE lo int := 1; ids text[];
BEGIN
  WHILE lo <= n LOOP
    IF ph = 'create' THEN
      EXECUTE format($q$INSERT INTO %I.job (job_id, partition, tenant_id, queue, state, due_at, payload)
        SELECT 'j' || lpad(g::text, 7, '0'), g %% 12, 'default', 'q', 'SCHEDULED', now(), convert_to(repeat('ab', 60), 'UTF8')
        FROM generate_series($1, $2) g$q$, s) USING lo, least(lo + bs - 1, n);
    ELSE
      ids := ARRAY(SELECT 'j' || lpad(g::text, 7, '0') FROM generate_series(lo, least(lo + bs - 1, n)) g);
      IF ph = 'claim' THEN
        EXECUTE format($q$UPDATE %I.job j SET state = 'DISPATCHED', attempt = j.attempt + 1, dispatched_at = now(),
          claim_epoch = 1, lease_owner = NULL, lease_until = now() + interval '5 min'
          WHERE j.job_id = ANY($1) AND j.state = 'SCHEDULED'$q$, s) USING ids;
      ELSIF ph = 'start' THEN
        EXECUTE format($q$UPDATE %I.job j SET state = 'RUNNING', lease_owner = 'w1', lease_generation = j.lease_generation + 1,
          lease_until = now() + interval '30 s', attempt_id = gen_random_uuid(), started_at = now()
          WHERE j.job_id = ANY($1) AND j.state = 'DISPATCHED'$q$, s) USING ids;
      ELSE
        EXECUTE format($q$UPDATE %I.job j SET state = 'SUCCEEDED', finished_at = now(), lease_until = NULL
          WHERE j.job_id = ANY($1) AND j.state = 'RUNNING'$q$, s) USING ids;
      END IF;
    END IF;
    COMMIT;
    lo := lo + bs;
  END LOOP;
END $$;
