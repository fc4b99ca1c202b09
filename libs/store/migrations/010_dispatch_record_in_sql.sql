-- 010: the Dispatch record (schemas/avro/Dispatch.avsc) written by Postgres itself, so that a firing
-- round is one statement: claim the due jobs and insert their outbox rows, in the statement's own
-- implicit transaction. Before, the scheduler read the claimed rows back, encoded each record in
-- Node and sent them in a second statement, inside BEGIN ... COMMIT: four round trips a round.
--
-- Avro binary encoding (https://avro.apache.org/docs/1.11.1/specification/#binary-encoding):
-- int and long are zig-zag varints, bytes and string a long length then the bytes, a union its
-- branch index as a long then the value, a map blocks of (count, entries) ended by a 0 count.
--
-- The functions are plain SQL expressions, so that the planner inlines them into the statement: no
-- function call per value. (STABLE where the body is, as convert_to() and extract() of a timestamptz
-- are: an IMMUTABLE function with a STABLE body is not inlined.) A varint's argument is referenced
-- many times in its body, so callers pass a column (the claim computes the zig-zag values once per
-- row in a subquery); an expression would be inlined, and evaluated, at every reference, or not
-- inlined at all. Measured on 100,000 rows: ~10 µs a record, with JIT off (the pool turns it off:
-- LLVM took seconds to compile the record's expression once a plan's cost passed jit_above_cost).

-- Avro's zig-zag: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ...
CREATE OR REPLACE FUNCTION sched_avro_zigzag(v bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (v << 1) # (v >> 63) $$;

-- Any 64-bit zig-zag value (read as unsigned), a byte at a time. The inlined form below covers
-- everything below 2^56 (|v| < 2^55, far beyond any ms timestamp, epoch or length we store) and
-- hands the rest to this one.
CREATE OR REPLACE FUNCTION sched_avro_varint_wide(z bigint) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  out bytea := '\x'::bytea;
  rest bigint := z;
BEGIN
  LOOP
    -- Logical shift right by 7: clear the bits the arithmetic shift copies from the sign.
    IF rest >= 0 AND rest < 128 THEN
      RETURN out || substring(int8send(rest << 56) FROM 1 FOR 1);
    END IF;
    out := out || substring(int8send(((rest & 127) | 128) << 56) FROM 1 FOR 1);
    rest := (rest >> 7) & x'01FFFFFFFFFFFFFF'::bigint;
  END LOOP;
END $$;

-- The varint of a zig-zag value: int8send() of the bytes placed big-endian, cut to length.
CREATE OR REPLACE FUNCTION sched_avro_varint(z bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE
  WHEN z >= 0 AND z < 128 THEN substring(int8send(z << 56) FROM 1 FOR 1)
  WHEN z >= 128 AND z < 16384 THEN substring(int8send((((z & 127) | 128) << 56) | ((z >> 7) << 48)) FROM 1 FOR 2)
  -- 6 bytes: ms timestamps of 2004-2039.
  WHEN z >= 34359738368 AND z < 4398046511104 THEN substring(int8send(
      (((z & 127) | 128) << 56)
    | ((((z >> 7) & 127) | 128) << 48)
    | ((((z >> 14) & 127) | 128) << 40)
    | ((((z >> 21) & 127) | 128) << 32)
    | ((((z >> 28) & 127) | 128) << 24)
    | ((z >> 35) << 16)) FROM 1 FOR 6)
  WHEN z >= 16384 AND z < 72057594037927936 THEN substring(int8send(
      (((z & 127) | 128) << 56)
    | ((((z >> 7) & 127) | 128) << 48)
    | ((((z >> 14) & 127) | (LEAST(z >> 21, 1) << 7)) << 40)
    | ((((z >> 21) & 127) | (LEAST(z >> 28, 1) << 7)) << 32)
    | ((((z >> 28) & 127) | (LEAST(z >> 35, 1) << 7)) << 24)
    | ((((z >> 35) & 127) | (LEAST(z >> 42, 1) << 7)) << 16)
    | ((((z >> 42) & 127) | (LEAST(z >> 49, 1) << 7)) << 8)
    | (z >> 49))
    FROM 1 FOR 3 + LEAST(z >> 21, 1)::int + LEAST(z >> 28, 1)::int + LEAST(z >> 35, 1)::int
               + LEAST(z >> 42, 1)::int + LEAST(z >> 49, 1)::int)
  WHEN z IS NOT NULL THEN sched_avro_varint_wide(z)
END $$;

CREATE OR REPLACE FUNCTION sched_avro_bytes(b bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT sched_avro_varint(octet_length(b)::bigint << 1) || b $$;

CREATE OR REPLACE FUNCTION sched_avro_string(s text) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT sched_avro_bytes(convert_to(s, 'UTF8')) $$;

-- ["null", "string"]: branch 0 null, branch 1 the string.
CREATE OR REPLACE FUNCTION sched_avro_opt_string(s text) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT CASE WHEN s IS NULL THEN '\x00'::bytea ELSE '\x02'::bytea || sched_avro_string(s) END $$;

-- ["null", "long"] of a zig-zag value.
CREATE OR REPLACE FUNCTION sched_avro_opt_varint(z bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE WHEN z IS NULL THEN '\x00'::bytea ELSE '\x02'::bytea || sched_avro_varint(z) END $$;

-- map<string> of a jsonb object (NULL: the empty map): one block of every entry, then 0. The
-- entries are walked in plpgsql, whose plans are cached: an SQL function with a sub-select is not
-- inlined and costs ~1 ms a call; the wrapper keeps the common empty map to a constant.
CREATE OR REPLACE FUNCTION sched_avro_string_map_entries(m jsonb) RETURNS bytea
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
  out bytea := '\x'::bytea;
  n bigint := 0;
  k text;
  v text;
BEGIN
  FOR k, v IN SELECT e.key, e.value FROM jsonb_each_text(m) AS e LOOP
    out := out || sched_avro_string(k) || sched_avro_string(v);
    n := n + 1;
  END LOOP;
  IF n = 0 THEN
    RETURN '\x00'::bytea;
  END IF;
  RETURN sched_avro_varint(n << 1) || out || '\x00'::bytea;
END $$;

CREATE OR REPLACE FUNCTION sched_avro_string_map(m jsonb) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT CASE WHEN m IS NULL OR m = '{}'::jsonb THEN '\x00'::bytea ELSE sched_avro_string_map_entries(m) END $$;

-- Whole ms of a timestamptz, as the Node side reads them (floor), as bigint.
CREATE OR REPLACE FUNCTION sched_ms(t timestamptz) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT floor(extract(epoch FROM t) * 1000)::bigint $$;
