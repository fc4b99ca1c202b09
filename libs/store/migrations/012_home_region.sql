-- 012: the home region. One row: the region whose schedulers may own partitions; NULL (the
-- default) lets any scheduler own, as in a deployment with one region. `region_promote` sets it and
-- bumps every partition's epoch in the same transaction, so the old region's owners are fenced off
-- at once; `partition_claim` reads it (FOR SHARE) before anything else, so a claim and a promotion
-- never interleave, and a scheduler of another region cannot take a partition afterwards.
CREATE TABLE home_region (
  singleton boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  region    text        CHECK (region <> ''),
  -- Bumped by every promotion: a region's term.
  epoch     bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
  since     timestamptz NOT NULL DEFAULT now()
);
INSERT INTO home_region (region) VALUES (NULL);
