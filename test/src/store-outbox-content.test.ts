import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { DISPATCH_CONTRACT, SubjectCodec, type Dispatch, type DispatchInput } from '@sched/contracts';
import {
  createPool,
  dropSchema,
  inTransaction,
  jobClaimDueDispatch,
  jobReconcileDueDispatch,
  migrate,
  outboxEmitReady,
} from '@sched/store';
import { endpoints, uniqueName } from './support/isolation.js';
import { openRecordSuite, type RecordSuite } from './support/record-suite.js';
import { sleep, type Collector } from './support/kafka.js';
import { dispatchContent, type DispatchFields } from './support/dispatch-layout.js';

/**
 * The SQL functions that write outbox records as logical decoding messages: the content of layout 1
 * (migration 014: topic, key, headers, value) and of layout 2 (migration 015: a Dispatch record's
 * fields), their bytes against the layouts' specifications, their inlining into the statements that
 * call them, their refusals (too long, no content: a clear error, nothing emitted), and a
 * transaction's messages reaching Kafka only if it commits. `store-dispatch-record.test.ts` follows
 * whole Dispatch records from the claim to the topic; `record-router.test.ts` tests the Java side.
 */
describe('store: outbox message content in SQL (layouts 1 and 2)', () => {
  let pool: pg.Pool;
  let schema: string;
  const codec = new SubjectCodec<Dispatch, DispatchInput>(DISPATCH_CONTRACT);
  codec.useSchemaId(4711);

  let collector: Collector;

  let suite: RecordSuite | undefined;
  beforeAll(async () => {
    suite = await openRecordSuite('sqlmsg', ['sched.dispatch.default']);
    ({ schema, pool, collector } = suite);
  });
  afterAll(async () => {
    await suite?.close();
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
