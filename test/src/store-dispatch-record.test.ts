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
  jobReconcileDueDispatch,
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

  it('encodes a long as Avro does, across the 64-bit range (each varint function, inlined forms and the wide one)', async () => {
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
    // 010's general varint, and 011's for small numbers (1-3 bytes inlined) and ms timestamps (6).
    const { rows } = await pool.query<{ v: string; b: Buffer; small: Buffer; ms: Buffer }>(
      `SELECT v::text AS v, sched_avro_varint(z) AS b, sched_avro_varint_small(z) AS small, sched_avro_varint_ms(z) AS ms
       FROM (SELECT v, sched_avro_zigzag(v) AS z FROM unnest($1::bigint[]) AS v OFFSET 0) s`,
      [values.map(String)],
    );
    expect(rows).toHaveLength(values.length);
    for (const r of rows) {
      const want = avroLong(BigInt(r.v)).toString('hex');
      expect([r.v, r.b.toString('hex'), r.small.toString('hex'), r.ms.toString('hex')]).toEqual([
        r.v,
        want,
        want,
        want,
      ]);
    }
  });

  /** Jobs that cover every field: multi-byte text, a long payload, maps of 0, 1 and 3 entries. */
  const sampleJobs = (prefix: string, due: number): NewJob[] => [
    newJob(`${prefix}plain`, due),
    {
      ...newJob(`${prefix}full-é✓`, due - 5),
      tenantId: 'tenant-ü',
      queue: 'q-sql',
      priority: -3,
      payload: Buffer.alloc(20_000, 7), // a length of three varint bytes
      businessKey: `${prefix}order-42/ß`,
      executionTimeoutMs: 86_400_000_000,
      headers: { trace: 'abc', 'x-ü': 'wert ✓', k: '' },
      scheduleId: 'nightly',
      occurrenceAtMs: due - 60_000,
    },
    { ...newJob(`${prefix}one-header`, due - 10), priority: 70_000, headers: { only: 'one' } },
    { ...newJob(`${prefix}empty-payload`, due), payload: Buffer.alloc(0) },
  ];

  /** Each job's outbox row holds the record the contracts' encoder writes for it. */
  async function expectRecords(
    jobs: NewJob[],
    dispatched: { jobId: string; dueAtMs: number; claimedAtMs: number; eventId?: string }[],
    partition: number,
    epoch: number,
  ): Promise<void> {
    const { rows } = await pool.query<{
      id: string;
      aggregatetype: string;
      aggregateid: string;
      type: string;
      payload: Buffer;
      version: number;
      attempt: number;
      epoch: number;
    }>(
      'SELECT id, aggregatetype, aggregateid, type, payload, version, attempt, epoch FROM outbox WHERE job_id = ANY($1)',
      [jobs.map((j) => j.jobId)],
    );
    expect(rows).toHaveLength(jobs.length);
    for (const job of jobs) {
      const claim = dispatched.find((c) => c.jobId === job.jobId)!;
      const row = rows.find((r) => r.aggregateid === job.jobId)!;
      expect(row).toMatchObject({
        aggregatetype: `dispatch.${job.queue}`,
        type: 'Dispatch',
        version: 1,
        attempt: 1,
        epoch,
      });
      if (claim.eventId !== undefined) expect(row.id).toBe(claim.eventId);
      expect(claim.dueAtMs).toBe(job.dueAtMs);
      expect(claim.claimedAtMs).toBeGreaterThanOrEqual(job.dueAtMs);
      const expected: DispatchInput = {
        eventId: row.id,
        jobId: job.jobId,
        tenantId: job.tenantId,
        queue: job.queue,
        version: 1,
        attempt: 1,
        epoch,
        partition,
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
  }

  it('claims and writes each outbox row with the record the contracts encode', async () => {
    const own = await partitionClaim(pool, 3, 'sql-record');
    const jobs = sampleJobs('claim-', Date.now() - 1_000);
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
    for (const c of out.claimed)
      expect(c).toMatchObject({ partition: 3, epoch: own.epoch, version: 1, attempt: 1 });
    await expectRecords(jobs, out.claimed, 3, own.epoch);
  });

  it('the catch-up claims overdue jobs with the same record, in the same statement', async () => {
    const own = await partitionClaim(pool, 4, 'sql-record');
    const jobs = sampleJobs('catch-up-', Date.now() - 10_000);
    const later = newJob('catch-up-later', Date.now() + 3_600_000);
    await inTransaction(pool, (c) => jobCreateBatch(c, 4, own.epoch, [...jobs, later]));
    const owned = [{ partition: 4, epoch: own.epoch }];
    const claimed = await jobReconcileDueDispatch(pool, owned, 100, 60_000, 1_000, codec.header());
    expect(claimed.map((d) => d.jobId).sort()).toEqual(jobs.map((j) => j.jobId).sort());
    for (const c of claimed)
      expect(c).toMatchObject({ partition: 4, epoch: own.epoch, version: 1, attempt: 1 });
    await expectRecords(jobs, claimed, 4, own.epoch);

    // Nothing left to claim; a stale epoch claims nothing either.
    expect(await jobReconcileDueDispatch(pool, owned, 100, 60_000, 1_000, codec.header())).toEqual([]);
    await pool.query(`UPDATE job SET state = 'SCHEDULED' WHERE job_id = $1`, [jobs[0]!.jobId]);
    const stale = [{ partition: 4, epoch: own.epoch - 1 }];
    expect(await jobReconcileDueDispatch(pool, stale, 100, 60_000, 1_000, codec.header())).toEqual([]);
    await expectRecords(jobs, claimed, 4, own.epoch);
  });
});
