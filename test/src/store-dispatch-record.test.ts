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
  DISPATCH_SQL_FIELDS,
  inTransaction,
  jobClaimDueDispatch,
  jobCreateBatch,
  jobReconcileDueDispatch,
  partitionClaim,
  type NewJob,
} from '@sched/store';
import { openRecordSuite, type RecordSuite } from './support/record-suite.js';
import { sleep, type Collector } from './support/kafka.js';
import { newJob } from './support/new-job.js';
import { avroLong } from './support/dispatch-layout.js';

/**
 * The Dispatch record of a job a firing round or the catch-up claims (`jobClaimDueDispatch`: Postgres
 * emits its fields, migration 015, and the connector's record router encodes it) must be the record
 * the contracts' encoder writes: workers read it with the registered schema. Compared
 * decoded (a jsonb map's key order is not the caller's) and, where no map reorders, byte for byte.
 * The records are read where workers read them, on the dispatch topics (outbox records are logical
 * decoding messages, migration 014: Debezium hands them on whatever the schema's publication).
 * The header carries a made-up schema id: the bytes are compared, nothing asks the registry.
 */
describe('store: the Dispatch record emitted in SQL, encoded by the router', () => {
  let pool: pg.Pool;
  let schema: string;
  const codec = new SubjectCodec<Dispatch, DispatchInput>(DISPATCH_CONTRACT);
  codec.useSchemaId(4711);

  let collector: Collector;

  let suite: RecordSuite | undefined;
  beforeAll(async () => {
    suite = await openRecordSuite('sqlrec', ['sched.dispatch.default', 'sched.dispatch.q-sql']);
    ({ schema, pool, collector } = suite);
  });
  afterAll(async () => {
    await suite?.close();
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
    // A timeout of 2^50 ms: an eight-byte varint (avsc reads longs up to 2^52 in magnitude).
    { ...newJob(`${prefix}long-timeout`, due), executionTimeoutMs: 2 ** 50 },
  ];

  /**
   * Each job's outbox record reached its queue's dispatch topic once (through Debezium and the
   * connector's record router), keyed by the job id, with the outbox headers and the record the
   * contracts' encoder writes for it.
   */
  async function expectRecords(
    jobs: NewJob[],
    dispatched: { jobId: string; dueAtMs: number; claimedAtMs: number; eventId?: string }[],
    partition: number,
    epoch: number,
  ): Promise<void> {
    const ids = new Set(jobs.map((j) => j.jobId));
    const mine = () => collector.raw.filter((m) => ids.has(m.key?.toString() ?? ''));
    await collector.waitFor(() => mine().length >= jobs.length, 30_000, `${jobs.length} dispatch records`);
    await sleep(300); // a second record of a job would be a duplicate: give it time to show
    const text = (v: unknown) => (v === undefined || v === null ? v : Buffer.from(v as Buffer).toString());
    const rows = mine().map((m) => ({
      topic: m.topic,
      key: m.key!.toString(),
      headers: Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, text(v)])),
      payload: m.value!,
    }));
    expect(rows).toHaveLength(jobs.length);
    for (const job of jobs) {
      const claim = dispatched.find((c) => c.jobId === job.jobId)!;
      const row = rows.find((r) => r.key === job.jobId)!;
      expect(row.topic).toBe(`sched.dispatch.${job.queue}`);
      expect(row.headers).toEqual({
        id: row.headers.id,
        eventType: 'Dispatch',
        jobId: job.jobId,
        version: '1',
        attempt: '1',
        epoch: String(epoch),
        tenantId: job.tenantId,
      });
      if (claim.eventId !== undefined) expect(row.headers.id).toBe(claim.eventId);
      expect(claim.dueAtMs).toBe(job.dueAtMs);
      expect(claim.claimedAtMs).toBeGreaterThanOrEqual(job.dueAtMs);
      const expected: DispatchInput = {
        eventId: row.headers.id as string,
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

  it('claims and emits each outbox record with the record the contracts encode', async () => {
    const own = await partitionClaim(pool, 3, 'sql-record');
    const jobs = sampleJobs(`${schema}-claim-`, Date.now() - 1_000);
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
    const jobs = sampleJobs(`${schema}-catch-up-`, Date.now() - 10_000);
    const later = newJob(`${schema}-catch-up-later`, Date.now() + 3_600_000);
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
