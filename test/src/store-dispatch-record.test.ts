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
  outboxEmitReady,
  partitionClaim,
  type NewJob,
} from '@sched/store';
import { endpoints, uniqueName } from './support/isolation.js';
import { Collector, ensureTopics, sleep } from './support/kafka.js';
import { newJob } from './support/new-job.js';
import { avroLong, dispatchContent, type DispatchFields } from './support/dispatch-layout.js';

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

  beforeAll(async () => {
    const { databaseUrl } = endpoints();
    schema = uniqueName('sqlrec').toLowerCase();
    const topics = ['sched.dispatch.default', 'sched.dispatch.q-sql'];
    await ensureTopics(topics.map((topic) => ({ topic, partitions: 3 })));
    collector = await new Collector(topics, false).start();
    await migrate(databaseUrl, { schema, publishOutbox: false });
    pool = createPool({ databaseUrl, schema, max: 2 });
  });
  afterAll(async () => {
    await collector?.stop();
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
  /** Layout 1 of an outbox record's content, as LogicalMessageRouter.java reads it. */
  function contentOf(
    topic: string,
    key: string | null,
    headers: [string, string | null][],
    value: Buffer,
  ): Buffer {
    const u16 = (b: Buffer | null) => {
      const out = Buffer.alloc(2);
      out.writeUInt16BE(b === null ? 0xffff : b.length);
      return b === null ? out : Buffer.concat([out, b]);
    };
    const str = (v: string | null) => (v === null ? null : Buffer.from(v, 'utf8'));
    return Buffer.concat([
      Buffer.from([1, Buffer.byteLength(topic)]),
      Buffer.from(topic),
      u16(str(key)),
      Buffer.from([headers.length]),
      ...headers.flatMap(([n, v]) => [Buffer.from([Buffer.byteLength(n)]), Buffer.from(n), u16(str(v))]),
      value,
    ]);
  }

  it('builds an outbox record content in layout 1 (topic, key, the seven headers, a NULL one as no value)', async () => {
    const { rows } = await pool.query<{ c: Buffer }>(
      `SELECT sched_outbox_content('events', 'jöb-1', '6f1c1d9e-0000-4000-8000-000000000001', 'JobEvent', 'jöb-1',
                                   3, 2, NULL, 'tenant-ü', '\\x00ff'::bytea) AS c`,
    );
    expect(rows[0]!.c.toString('hex')).toBe(
      contentOf(
        'sched.events',
        'jöb-1',
        [
          ['id', '6f1c1d9e-0000-4000-8000-000000000001'],
          ['eventType', 'JobEvent'],
          ['jobId', 'jöb-1'],
          ['version', '3'],
          ['attempt', '2'],
          ['epoch', null],
          ['tenantId', 'tenant-ü'],
        ],
        Buffer.from([0, 255]),
      ).toString('hex'),
    );
  });

  it('inlines the whole record content into the emitting statement (a called SQL function costs ~50x)', async () => {
    // Postgres inlines a SQL function only if it calls nothing more volatile than it is declared,
    // and uses a many-times-used parameter only if its argument is cheap: migration 014's notes.
    // Arguments are columns, as in every writer (the claim's CTEs, unnest of the applier's arrays).
    const { rows } = await pool.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN VERBOSE SELECT sched_outbox_emit('dispatch.' || s.q, s.k, s.e, 'Dispatch', s.k, s.v, s.a, s.p, s.t, s.b)
       FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::bigint[], $7::text[], $8::bytea[])
         AS s(q, k, e, v, a, p, t, b)`,
      [['default'], ['job-1'], ['ev-1'], [1], [1], [7], ['default'], [Buffer.from([0])]],
    );
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain('pg_logical_emit_message(true');
    for (const fn of ['sched_outbox_emit(', 'sched_outbox_content(', 'sched_u16_len(', 'sched_u8_len('])
      expect(plan).not.toContain(fn);
  });

  it('builds a Dispatch record content in layout 2 (migration 015: the fields the router encodes)', async () => {
    const framing = Buffer.from('0000001267', 'hex');
    const cases: DispatchFields[] = [
      {
        framing,
        eventId: '6f1c1d9e-0000-4000-8000-0000000000ff',
        jobId: 'jöb-1',
        tenantId: 'tenant-ü',
        queue: 'q',
        version: 3,
        attempt: 2,
        epoch: 9n,
        partition: 5,
        dueAtMs: 1_764_547_200_000n,
        claimedAtMs: 1_764_547_200_123n,
        payload: Buffer.from([0, 255]),
        priority: -3,
        businessKey: 'bk',
        executionTimeoutMs: 86_400_000_000n,
        scheduleId: null,
        occurrenceAtMs: null,
        headers: { k: 'v' },
      },
      {
        framing,
        eventId: '00000000-0000-4000-8000-000000000001',
        jobId: 'j',
        tenantId: 't',
        queue: 'q-😀',
        version: 1,
        attempt: 1,
        epoch: (1n << 63n) - 1n,
        partition: 0,
        dueAtMs: -1n,
        claimedAtMs: 0n,
        payload: Buffer.alloc(0),
        priority: 0,
        businessKey: null,
        executionTimeoutMs: null,
        scheduleId: 's',
        occurrenceAtMs: -(1n << 63n),
        headers: {},
      },
    ];
    for (const f of cases) {
      const { rows } = await pool.query<{ c: Buffer }>(
        `SELECT sched_dispatch_content($1, $2, convert_to($3, 'UTF8'), convert_to($4, 'UTF8'), convert_to($5, 'UTF8'),
                                      $6, $7, $8, $9, $10, $11, $12, $13, convert_to($14, 'UTF8'), $15,
                                      convert_to($16, 'UTF8'), $17, $18) AS c`,
        [
          f.framing,
          f.eventId,
          f.jobId,
          f.tenantId,
          f.queue,
          f.version,
          f.attempt,
          String(f.epoch),
          f.partition,
          String(f.dueAtMs),
          String(f.claimedAtMs),
          f.payload,
          f.priority,
          f.businessKey,
          f.executionTimeoutMs === null ? null : String(f.executionTimeoutMs),
          f.scheduleId,
          f.occurrenceAtMs === null ? null : String(f.occurrenceAtMs),
          JSON.stringify(f.headers),
        ],
      );
      expect(rows[0]!.c.toString('hex')).toBe(dispatchContent(f).content.toString('hex'));
    }
  });

  it('inlines the Dispatch record content into the firing and the catch-up claims (migration 015)', async () => {
    // The real statements, as the scheduler sends them, planned and not run.
    let sent: { text: string; values: unknown[] } | undefined;
    const capture = {
      query: async (cfg: { text: string; values: unknown[] }) => {
        sent = cfg;
        return { rows: [{ now_ms: 0, current: [], job_id: null }] };
      },
    } as unknown as pg.Pool;
    const owned = [{ partition: 0, epoch: 1 }];
    const statements: { text: string; values: unknown[] }[] = [];
    await jobClaimDueDispatch(capture, owned, ['j'], 1_000, codec.header());
    statements.push(sent!);
    await jobReconcileDueDispatch(capture, owned, 100, 1_000, 1_000, codec.header());
    statements.push(sent!);
    for (const st of statements) {
      const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN VERBOSE ${st.text}`, st.values);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('pg_logical_emit_message(true');
      const called = ['sched_dispatch_emit(', 'sched_dispatch_content(', 'sched_u16_len(', 'sched_u8_len('];
      for (const fn of [...called, 'sched_avro_string_map(', 'sched_ms(']) expect(plan).not.toContain(fn);
    }
  });

  it('refuses a Dispatch record field too long for layout 2 with SCHED_E_RECORD_FIELD_TOO_LONG', async () => {
    const err = await pool
      .query(
        `SELECT sched_dispatch_content('\\x0000001267'::bytea, gen_random_uuid(), convert_to('j', 'UTF8'),
                                      convert_to('t', 'UTF8'), convert_to('q', 'UTF8'), 1, 1, 1, 0, 0, 0, '\\x'::bytea,
                                      0, convert_to($1, 'UTF8'), NULL, NULL, NULL, NULL)`,
        ['b'.repeat(70_000)],
      )
      .catch((e: Error) => e);
    expect((err as Error).message).toMatch(
      /^SCHED_E_RECORD_FIELD_TOO_LONG: an outbox key or header value of 70000 bytes/,
    );
  });

  it('refuses a Dispatch record without content with SCHED_E_RECORD_NULL', async () => {
    const err = await pool
      .query(`SELECT sched_dispatch_emit(NULL::bytea, 'job-null')`)
      .catch((e: Error) => e);
    expect((err as Error).message).toMatch(
      /^SCHED_E_RECORD_NULL: the Dispatch record of job-null has no content/,
    );
  });

  it('says whether a schema has migration 014 (a worker refuses to start on one without it)', async () => {
    expect(await outboxEmitReady(pool)).toBe(true);
    const behind = uniqueName('behind').toLowerCase();
    await migrate(endpoints().databaseUrl, { schema: behind, publishOutbox: false });
    const other = createPool({ databaseUrl: endpoints().databaseUrl, schema: behind, max: 1 });
    try {
      await other.query(
        'DROP FUNCTION sched_outbox_emit(text, text, text, text, text, integer, integer, bigint, text, bytea)',
      );
      expect(await outboxEmitReady(other)).toBe(false);
    } finally {
      await other.end();
      await dropSchema(endpoints().databaseUrl, behind);
    }
  });

  it('refuses a key too long for the layout with SCHED_E_RECORD_FIELD_TOO_LONG and emits nothing', async () => {
    const key = `${schema}-${'k'.repeat(70_000)}`;
    const err = await pool
      .query(
        `SELECT sched_outbox_emit('dispatch.default', $1, gen_random_uuid()::text, 'Dispatch', $1, 1, 1, 1, 'default', '\\x00')`,
        [key],
      )
      .catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(
      /^SCHED_E_RECORD_FIELD_TOO_LONG: an outbox key or header value of 70\d{3} bytes/,
    );
  });

  it('refuses a record without content with SCHED_E_RECORD_NULL (pg_logical_emit_message would write nothing)', async () => {
    const err = await pool
      .query(
        `SELECT sched_outbox_emit('dispatch.default', 'k', 'ev-null', 'Dispatch', 'k', 1, 1, 1, 'default', NULL::bytea)`,
      )
      .catch((e: Error) => e);
    expect((err as Error).message).toMatch(/^SCHED_E_RECORD_NULL: the outbox record ev-null of k/);
  });

  it('emits nothing for a rolled-back transaction; a committed one arrives, a NULL column as a header without value', async () => {
    const gone = `${schema}-rolled-back`;
    const kept = `${schema}-committed`;
    const emit = (c: pg.ClientBase, key: string) =>
      c.query(
        `SELECT sched_outbox_emit('dispatch.default', $1, gen_random_uuid()::text, 'JobEvent', $1, 2, 1, NULL, 'default', '\\x0102'::bytea)`,
        [key],
      );
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      await emit(c, gone);
      await c.query('ROLLBACK');
      await inTransaction(pool, (t) => emit(t, kept));
    } finally {
      c.release();
    }
    // Connect hands records on in commit order; the two keys may sit on different partitions, so
    // give the earlier one a moment more than the later one took.
    await collector.waitFor(
      () => collector.raw.some((m) => m.key?.toString() === kept),
      30_000,
      'the committed record',
    );
    await sleep(1_000);
    expect(collector.raw.filter((m) => m.key?.toString() === gone)).toEqual([]);
    const m = collector.raw.find((r) => r.key?.toString() === kept)!;
    expect(m.value!.toString('hex')).toBe('0102');
    expect(Object.keys(m.headers)).toEqual([
      'id',
      'eventType',
      'jobId',
      'version',
      'attempt',
      'epoch',
      'tenantId',
    ]);
    expect(m.headers.epoch ?? null).toBeNull();
    expect(String(m.headers.version)).toBe('2');
  });
});
