import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import {
  DISPATCH_CONTRACT,
  SubjectCodec,
  type Dispatch,
  type DispatchInput,
  HEADER_BYTES,
  readSchemaId,
} from '@sched/contracts';
import {
  createPool,
  dropSchema,
  DISPATCH_SQL_FIELDS,
  inTransaction,
  jobClaimDueDispatch,
  jobCreateBatch,
  migrate,
  partitionClaim,
  type NewJob,
} from '@sched/store';
import { endpoints, uniqueName } from './support/isolation.js';
import { newJob } from './support/new-job.js';

/** Avro's long (zig-zag, then base-128 varint, low group first), over the whole 64-bit range. */
function avroLong(v: bigint): Buffer {
  let z = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
  const out: number[] = [];
  while (z >= 0x80n) {
    out.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  out.push(Number(z));
  return Buffer.from(out);
}

/**
 * The Dispatch record a firing round has Postgres write (migration 010, `jobClaimDueDispatch`) must
 * be the record the contracts' encoder writes: workers read it with the registered schema. Compared
 * decoded (a jsonb map's key order is not the caller's) and, where no map reorders, byte for byte.
 * The schema is not published to Debezium: the header carries a made-up schema id.
 */
describe('store: the Dispatch record written in SQL', () => {
  let pool: pg.Pool;
  let schema: string;
  const codec = new SubjectCodec<Dispatch, DispatchInput>(DISPATCH_CONTRACT);
  codec.useSchemaId(4711);

  beforeAll(async () => {
    const { databaseUrl } = endpoints();
    schema = uniqueName('sqlrec').toLowerCase();
    await migrate(databaseUrl, { schema, publishOutbox: false });
    pool = createPool({ databaseUrl, schema, max: 2 });
  });
  afterAll(async () => {
    await pool?.end();
    if (schema) await dropSchema(endpoints().databaseUrl, schema);
  });

  it('writes the fields of Dispatch.avsc, in its order', () => {
    const fields = DISPATCH_CONTRACT.schema.fields.map((f) => f.name);
    expect([...DISPATCH_SQL_FIELDS]).toEqual(fields);
  });

  it('encodes a long as Avro does, across the 64-bit range (the inlined forms and the wide one)', async () => {
    const values: bigint[] = [0n, 1n, -1n, 63n, -64n, 64n, -65n, 8191n, 8192n, -8193n];
    for (let bits = 14n; bits <= 63n; bits += 7n) {
      const edge = 1n << bits;
      values.push(edge / 2n - 1n, edge / 2n, -(edge / 2n), -(edge / 2n) - 1n);
    }
    values.push(
      1_764_547_200_000n,
      -1_764_547_200_000n,
      9_007_199_254_740_991n,
      (1n << 63n) - 1n,
      -(1n << 63n),
    );
    const { rows } = await pool.query<{ v: string; b: Buffer }>(
      'SELECT v::text AS v, sched_avro_varint(sched_avro_zigzag(v)) AS b FROM unnest($1::bigint[]) AS v',
      [values.map(String)],
    );
    expect(rows).toHaveLength(values.length);
    for (const r of rows)
      expect([r.v, r.b.toString('hex')]).toEqual([r.v, avroLong(BigInt(r.v)).toString('hex')]);
  });

  it('claims and writes each outbox row with the record the contracts encode', async () => {
    const own = await partitionClaim(pool, 3, 'sql-record');
    const due = Date.now() - 1_000;
    const big = Buffer.alloc(20_000, 7); // a length of three varint bytes
    const jobs: NewJob[] = [
      newJob('plain', due),
      {
        ...newJob('full-é✓', due - 5),
        tenantId: 'tenant-ü',
        queue: 'q-sql',
        priority: -3,
        payload: big,
        businessKey: 'order-42/ß',
        executionTimeoutMs: 86_400_000_000,
        headers: { trace: 'abc', 'x-ü': 'wert ✓', k: '' },
        scheduleId: 'nightly',
        occurrenceAtMs: due - 60_000,
      },
      { ...newJob('one-header', due - 10), priority: 70_000, headers: { only: 'one' } },
      { ...newJob('empty-payload', due), payload: Buffer.alloc(0) },
    ];
    await inTransaction(pool, (c) => jobCreateBatch(c, 3, own.epoch, jobs));
    const out = await jobClaimDueDispatch(
      pool,
      [{ partition: 3, epoch: own.epoch }],
      [...jobs.map((j) => j.jobId), 'no-such-job'],
      60_000,
      codec.header(),
    );
    expect(out.current).toEqual(new Set([3]));
    expect(out.claimed.map((c) => c.jobId).sort()).toEqual(jobs.map((j) => j.jobId).sort());

    const { rows } = await pool.query<{
      id: string;
      aggregatetype: string;
      aggregateid: string;
      type: string;
      payload: Buffer;
      version: number;
      attempt: number;
      epoch: number;
    }>('SELECT id, aggregatetype, aggregateid, type, payload, version, attempt, epoch FROM outbox');
    expect(rows).toHaveLength(jobs.length);
    for (const job of jobs) {
      const claim = out.claimed.find((c) => c.jobId === job.jobId)!;
      const row = rows.find((r) => r.aggregateid === job.jobId)!;
      expect(row).toMatchObject({
        id: claim.eventId,
        aggregatetype: `dispatch.${job.queue}`,
        type: 'Dispatch',
        version: 1,
        attempt: 1,
        epoch: own.epoch,
      });
      expect(claim).toMatchObject({
        partition: 3,
        epoch: own.epoch,
        version: 1,
        attempt: 1,
        dueAtMs: job.dueAtMs,
      });
      expect(claim.claimedAtMs).toBeGreaterThanOrEqual(job.dueAtMs);
      const expected: DispatchInput = {
        eventId: claim.eventId,
        jobId: job.jobId,
        tenantId: job.tenantId,
        queue: job.queue,
        version: 1,
        attempt: 1,
        epoch: own.epoch,
        partition: 3,
        dueAtMs: job.dueAtMs,
        claimedAtMs: claim.claimedAtMs,
        payload: job.payload,
        priority: job.priority,
        businessKey: job.businessKey,
        idempotencyKey: job.businessKey ?? job.jobId,
        executionTimeoutMs: job.executionTimeoutMs,
        scheduleId: job.scheduleId ?? null,
        occurrenceAtMs: job.occurrenceAtMs ?? null,
        headers: job.headers,
      };
      expect(readSchemaId(row.payload)).toBe(4711);
      expect(codec.decodeFramed(row.payload, 4711)).toEqual(codec.decodeFramed(codec.encode(expected), 4711));
      if (Object.keys(job.headers).length <= 1) {
        expect(row.payload.subarray(HEADER_BYTES).toString('hex')).toBe(
          codec.encode(expected).subarray(HEADER_BYTES).toString('hex'),
        );
      }
    }
  });
});
