import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DISPATCH_CONTRACT, SubjectCodec, type Dispatch, type DispatchInput } from '@sched/contracts';
import { recordRouterRuntime } from '@sched/local-stack';
import { seededRandom as rng } from '@sched/retry-policy';
import { dispatchAvro, dispatchContent, type DispatchFields } from './support/dispatch-layout.js';

const HARNESS = fileURLToPath(new URL('./fixtures/RouterHarness.java', import.meta.url));
const PREFIX = 'sched.record.v1';
/** The ts_ms the harness gives every message: the record's timestamp. */
const TS_MS = 1_764_547_200_123;

interface Routed {
  topic: string;
  key: string | null;
  headers: [string, string | null][];
  value: Buffer;
  timestamp: number;
}
type Outcome = { kind: 'OK'; record: Routed } | { kind: 'SAME' } | { kind: 'ERR'; message: string };

/**
 * The connector's record router (deploy/local/java/smt/LogicalMessageRouter.java) run outside
 * Connect by a harness on the JVM Connect runs on, against the same jars: every Dispatch record it
 * builds from layout 2 (store migration 015) must be the record the contracts' encoder writes
 * (avsc), and the one Avro's specification gives over the whole 64-bit range; content it cannot
 * read must fail with a clear error rather than become a record.
 */
describe('connect: the record router builds Dispatch records from layout 2', () => {
  let runtime: { java: string; classpath: string };
  const codec = new SubjectCodec<Dispatch, DispatchInput>(DISPATCH_CONTRACT);
  codec.useSchemaId(4711);

  beforeAll(async () => {
    runtime = await recordRouterRuntime();
  }, 300_000);

  function route(messages: { prefix: string; content: Buffer }[]): Outcome[] {
    const input = messages.map((m) => `${m.prefix}\t${m.content.toString('hex')}\n`).join('');
    const r = spawnSync(runtime.java, ['-cp', runtime.classpath, HARNESS], {
      input,
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    if (r.status !== 0) throw new Error(`harness failed (${r.status}): ${r.stderr}`);
    const text = (hex: string) => Buffer.from(hex, 'hex').toString('utf8');
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(messages.length);
    return lines.map((line): Outcome => {
      const [kind, ...rest] = line.split('\t');
      if (kind === 'SAME') return { kind: 'SAME' };
      if (kind === 'ERR') return { kind: 'ERR', message: rest.join('\t') };
      const [topic, key, headers, value, timestamp] = rest as [string, string, string, string, string];
      return {
        kind: 'OK',
        record: {
          topic,
          key: key === '~' ? null : text(key),
          headers: headers
            .split(',')
            .filter(Boolean)
            .map((h) => {
              const [name, v] = h.split('=') as [string, string];
              return [name, v === '~' ? null : text(v)];
            }),
          value: Buffer.from(value, 'hex'),
          timestamp: Number(timestamp),
        },
      };
    });
  }

  const CHARS = ['a', 'Z', '0', '-', '_', '/', ' ', 'é', 'ß', '✓', '日', '𝄞', '😀'];
  const randomJob = (next: () => number, i: number): DispatchFields => {
    const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
    const str = (min: number, max: number) =>
      Array.from({ length: int(min, max) }, () => CHARS[int(0, CHARS.length - 1)]).join('');
    // Longs within ±2^52, where avsc reads them too; the extremes have a test of their own.
    const long = (bits: number) => BigInt(int(-1, 1) * Math.floor(next() * 2 ** Math.min(bits, 52)));
    const maybe = <T>(v: () => T): T | null => (next() < 0.5 ? null : v());
    const headers: Record<string, string> = {};
    for (let h = int(0, 3); h > 0; h--) headers[`h${h}-${str(0, 4)}`] = str(0, 12);
    return {
      framing: codec.header(),
      eventId: randomUUID(),
      jobId: `job-${i}-${str(0, 30)}`,
      tenantId: str(1, 12),
      queue: `q${str(0, 20)}`,
      version: int(1, 2 ** 31 - 1),
      attempt: int(1, 1000),
      epoch: long(int(1, 60)),
      partition: int(0, 2 ** 31 - 1),
      dueAtMs: long(int(1, 60)),
      claimedAtMs: long(int(1, 60)),
      payload: Buffer.from(
        Array.from({ length: next() < 0.1 ? int(128, 20_000) : int(0, 127) }, () => int(0, 255)),
      ),
      priority: int(-(2 ** 31), 2 ** 31 - 1),
      businessKey: maybe(() => str(0, 40)),
      executionTimeoutMs: maybe(() => long(int(1, 60))),
      scheduleId: maybe(() => str(1, 30)),
      occurrenceAtMs: maybe(() => long(int(1, 60))),
      headers,
    };
  };

  /** What the contracts' encoder is given for these fields (its longs are numbers). */
  const inputOf = (f: DispatchFields): DispatchInput => ({
    eventId: f.eventId,
    jobId: f.jobId,
    tenantId: f.tenantId,
    queue: f.queue,
    version: f.version,
    attempt: f.attempt,
    epoch: Number(f.epoch),
    partition: f.partition,
    dueAtMs: Number(f.dueAtMs),
    claimedAtMs: Number(f.claimedAtMs),
    payload: f.payload,
    priority: f.priority,
    businessKey: f.businessKey,
    idempotencyKey: f.businessKey ?? f.jobId,
    executionTimeoutMs: f.executionTimeoutMs === null ? null : Number(f.executionTimeoutMs),
    scheduleId: f.scheduleId,
    occurrenceAtMs: f.occurrenceAtMs === null ? null : Number(f.occurrenceAtMs),
    headers: f.headers,
  });

  const expectRecordOf = (out: Outcome, f: DispatchFields) => {
    expect(out.kind).toBe('OK');
    const r = (out as { record: Routed }).record;
    expect(r.topic).toBe(`sched.dispatch.${f.queue}`);
    expect(r.key).toBe(f.jobId);
    expect(r.headers).toEqual([
      ['id', f.eventId],
      ['eventType', 'Dispatch'],
      ['jobId', f.jobId],
      ['version', String(f.version)],
      ['attempt', String(f.attempt)],
      ['epoch', String(f.epoch)],
      ['tenantId', f.tenantId],
    ]);
    expect(r.timestamp).toBe(TS_MS);
    expect(r.value.toString('hex')).toBe(dispatchAvro(f).toString('hex'));
  };

  it('encodes 400 generated records byte for byte as the contracts encoder and the Avro specification do', () => {
    const next = rng(20261205);
    const jobs = Array.from({ length: 400 }, (_, i) => randomJob(next, i));
    const outs = route(jobs.map((f) => ({ prefix: PREFIX, content: dispatchContent(f).content })));
    jobs.forEach((f, i) => {
      expectRecordOf(outs[i]!, f);
      const routed = (outs[i] as { record: Routed }).record.value;
      expect(routed.toString('hex')).toBe(codec.encode(inputOf(f)).toString('hex'));
    });
  });

  it('encodes the extremes of every integer field (64-bit longs, 32-bit ints)', () => {
    const max = (1n << 63n) - 1n;
    const min = -(1n << 63n);
    const base = randomJob(rng(1), 0);
    const cases: DispatchFields[] = [
      { ...base, epoch: max, dueAtMs: min, claimedAtMs: max, executionTimeoutMs: max, occurrenceAtMs: min },
      { ...base, epoch: min, dueAtMs: max, claimedAtMs: 0n, executionTimeoutMs: min, occurrenceAtMs: max },
      { ...base, version: 2 ** 31 - 1, attempt: -(2 ** 31), partition: 2 ** 31 - 1, priority: -(2 ** 31) },
      {
        ...base,
        version: 0,
        attempt: 0,
        partition: 0,
        priority: 0,
        epoch: -1n,
        dueAtMs: 63n,
        claimedAtMs: -64n,
      },
      { ...base, businessKey: '', scheduleId: '', payload: Buffer.alloc(0), headers: {} },
    ];
    const outs = route(cases.map((f) => ({ prefix: PREFIX, content: dispatchContent(f).content })));
    cases.forEach((f, i) => expectRecordOf(outs[i]!, f));
  });

  it('still routes layout 1 records, and hands back records that are not its messages', () => {
    const topic = 'sched.events';
    const value = Buffer.from([0, 1, 2, 255]);
    const l1 = Buffer.concat([
      Buffer.from([1, topic.length]),
      Buffer.from(topic),
      Buffer.from([0, 3]),
      Buffer.from('k-1'),
      Buffer.from([2, 2]),
      Buffer.from('id'),
      Buffer.from([0, 2]),
      Buffer.from('e1'),
      Buffer.from([5]),
      Buffer.from('epoch'),
      Buffer.from([0xff, 0xff]),
      value,
    ]);
    const outs = route([
      { prefix: PREFIX, content: l1 },
      { prefix: 'another.prefix', content: l1 },
      { prefix: '-', content: Buffer.alloc(0) },
    ]);
    expect(outs[0]).toEqual({
      kind: 'OK',
      record: {
        topic,
        key: 'k-1',
        headers: [
          ['id', 'e1'],
          ['epoch', null],
        ],
        value,
        timestamp: TS_MS,
      },
    });
    expect(outs.slice(1)).toEqual([{ kind: 'SAME' }, { kind: 'SAME' }]);
  });

  it('fails content it cannot read (cut short, an unknown layout, a bad flag) with where it came from', () => {
    const f = { ...randomJob(rng(7), 0), executionTimeoutMs: 5n };
    const { content, headersAt } = dispatchContent(f);
    // Cut anywhere before the headers (the rest of the message is the headers map, copied as it is).
    const cut = Array.from({ length: headersAt }, (_, n) => content.subarray(0, n));
    const unknown = Buffer.from(content);
    unknown[0] = 3;
    // The executionTimeoutMs flag: where the content with a timeout first differs from one without.
    const without = dispatchContent({ ...f, executionTimeoutMs: null }).content;
    const flagAt = [...content].findIndex((b, i) => b !== without[i]);
    expect(content[flagAt]).toBe(1);
    const badFlag = Buffer.from(content);
    badFlag[flagAt] = 2;
    const outs = route([
      ...cut.map((c) => ({ prefix: PREFIX, content: c })),
      { prefix: PREFIX, content: unknown },
      { prefix: PREFIX, content: badFlag },
    ]);
    expect(outs).toHaveLength(headersAt + 2);
    for (const o of outs) {
      expect(o.kind).toBe('ERR');
      expect((o as { message: string }).message).toMatch(
        /^sched\.connect\.LogicalMessageRouter: message content at \{lsn=42\} does not parse \(\d+ bytes\)/,
      );
    }
    expect((outs.at(-2) as { message: string }).message).toContain(
      'layout version 3, this router reads 1 and 2',
    );
    expect((outs.at(-1) as { message: string }).message).toContain('optional flag 2');
  });
});
