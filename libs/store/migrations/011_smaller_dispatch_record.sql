-- 011: a smaller Dispatch record expression. Migration 010's varint inlines four cases (1, 2 and 6
-- bytes, and a general one up to 2^56) at every one of the record's 17 varints; the executor sets up
-- that whole expression, hundreds of function and operator nodes, on every execution of the
-- statement, prepared or not: ~370 µs a statement however few rows it writes (one row: 0.45 ms
-- against 0.08 ms without the record), which made a firing round or a create of a few jobs cost
-- Postgres more than the four round trips it saved. Here each number gets the cases it needs:
-- lengths and small counters 1 to 3 bytes, ms timestamps 6 bytes, anything else the wide function
-- of 010 (a plpgsql call, only for values that need it); the event id, a UUID, always has 36
-- characters. Measured the same way: 0.13-0.16 ms a one-row statement.

-- A varint of a zig-zag value below 2^21 inlined (1 to 3 bytes: lengths, versions, attempts,
-- epochs, partitions, priorities, timeouts up to ~17 min), anything larger by the wide function.
CREATE OR REPLACE FUNCTION sched_avro_varint_small(z bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE
  WHEN z >= 0 AND z < 128 THEN substring(int8send(z << 56) FROM 1 FOR 1)
  WHEN z >= 128 AND z < 16384 THEN substring(int8send((((z & 127) | 128) << 56) | ((z >> 7) << 48)) FROM 1 FOR 2)
  WHEN z >= 16384 AND z < 2097152 THEN substring(int8send((((z & 127) | 128) << 56)
    | ((((z >> 7) & 127) | 128) << 48) | ((z >> 14) << 40)) FROM 1 FOR 3)
  WHEN z IS NOT NULL THEN sched_avro_varint_wide(z)
END $$;
-- A varint of a zig-zag ms timestamp: 6 bytes for 2004-2039 inlined, else the wide function.
CREATE OR REPLACE FUNCTION sched_avro_varint_ms(z bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE
  WHEN z >= 34359738368 AND z < 4398046511104 THEN substring(int8send(
      (((z & 127) | 128) << 56)
    | ((((z >> 7) & 127) | 128) << 48)
    | ((((z >> 14) & 127) | 128) << 40)
    | ((((z >> 21) & 127) | 128) << 32)
    | ((((z >> 28) & 127) | 128) << 24)
    | ((z >> 35) << 16)) FROM 1 FOR 6)
  WHEN z IS NOT NULL THEN sched_avro_varint_wide(z)
END $$;
