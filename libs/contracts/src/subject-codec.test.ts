import { COMMAND_CONTRACT, DISPATCH_CONTRACT, JOB_EVENT_CONTRACT } from '@sched/schemas';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createAvroType } from './avro-types';
import { FULL_COMMANDS, FULL_DISPATCH, MINIMAL_COMMANDS } from './contract-samples';
import { type ContractsError, isContractsError } from './contracts-error';
import type { Command, CommandInput, Dispatch, DispatchInput } from './generated-types';
import { SubjectCodec } from './subject-codec';
import { readSchemaId } from './wire-format';

function caught(fn: () => unknown): ContractsError {
  try {
    fn();
  } catch (error) {
    if (isContractsError(error)) return error;
    throw error;
  }
  throw new Error('expected a ContractsError');
}

function commandCodec(id = 41): SubjectCodec<Command, CommandInput> {
  const codec = new SubjectCodec<Command, CommandInput>(COMMAND_CONTRACT);
  codec.useSchemaId(id);
  return codec;
}

describe('SubjectCodec', () => {
  it('frames with magic byte 0 and the registered id, and decodes its own output', () => {
    const codec = commandCodec(0x7f000001);
    for (const command of FULL_COMMANDS) {
      const bytes = codec.encode(command);
      expect(bytes[0]).toBe(0);
      expect(readSchemaId(bytes)).toBe(0x7f000001);
      expect(codec.decodeFramed(bytes, 0x7f000001)).toEqual(command);
    }
  });

  it('returns independent buffers (the scratch buffer is not shared with callers)', () => {
    const codec = commandCodec();
    const [a, b] = [
      codec.encode(MINIMAL_COMMANDS[0] as CommandInput),
      codec.encode(MINIMAL_COMMANDS[1] as CommandInput),
    ];
    expect(a.buffer === b.buffer && a.byteOffset === b.byteOffset).toBe(false);
    expect(codec.decodeFramed(a, 41).body.kind).toBe('CreateJob');
  });

  it('encodes values larger than its scratch buffer', () => {
    const codec = commandCodec();
    const payload = Buffer.alloc(3 * 1024 * 1024, 7);
    const command: CommandInput = {
      commandId: 'big',
      tenantId: 't',
      issuedAtMs: 1,
      body: { kind: 'CreateJob', value: { jobId: 'j', queue: 'q', dueAtMs: 2, payload } },
    };
    const decoded = codec.decodeFramed(codec.encode(command), 41);
    expect(decoded.body.kind === 'CreateJob' && decoded.body.value.payload.equals(payload)).toBe(true);
    expect(codec.decodeFramed(codec.encode(MINIMAL_COMMANDS[2] as CommandInput), 41).body.kind).toBe(
      'RescheduleJob',
    );
  });

  it('refuses to encode before it knows its schema id', () => {
    const codec = new SubjectCodec<Command, CommandInput>(COMMAND_CONTRACT);
    const error = caught(() => codec.encode(MINIMAL_COMMANDS[0] as CommandInput));
    expect([error.code, error.retriable]).toEqual(['SCHED_E_NOT_REGISTERED', false]);
  });

  it('names the invalid fields of a value that does not match the schema', () => {
    const codec = new SubjectCodec<Dispatch, DispatchInput>(DISPATCH_CONTRACT);
    codec.useSchemaId(3);
    const error = caught(() =>
      codec.encode({ ...FULL_DISPATCH, attempt: 1.5, headers: { a: 1 } } as unknown as DispatchInput),
    );
    expect(error.code).toBe('SCHED_E_INVALID_MESSAGE');
    expect(error.paths).toEqual([['attempt'], ['headers', 'a']]);
    expect(error.message).toContain('attempt, headers.a');
  });

  it('decodes data of a compatible older writer with the current shape', () => {
    const older = structuredClone(DISPATCH_CONTRACT.schema) as unknown as { fields: { name: string }[] };
    older.fields = older.fields.filter((f) => f.name !== 'occurrenceAtMs' && f.name !== 'headers');
    const writer = createAvroType(older);
    const codec = new SubjectCodec<Dispatch, DispatchInput>(DISPATCH_CONTRACT);
    codec.learnWriter(90, writer);
    const { occurrenceAtMs: _o, headers: _h, ...rest } = FULL_DISPATCH;
    const bytes = Buffer.concat([Buffer.from([0, 0, 0, 0, 90]), writer.toBuffer(rest)]);
    expect(codec.decodeFramed(bytes, 90)).toEqual({ ...rest, occurrenceAtMs: null, headers: {} });
  });

  it('refuses a writer of another record as SCHED_E_INCOMPATIBLE_SCHEMA, every time', () => {
    const codec = commandCodec();
    codec.learnWriter(5, createAvroType(JOB_EVENT_CONTRACT.schema));
    expect(codec.knowsWriter(5)).toBe(true);
    const bytes = Buffer.from([0, 0, 0, 0, 5, 0]);
    const first = caught(() => codec.decodeFramed(bytes, 5));
    const second = caught(() => codec.decodeFramed(bytes, 5));
    expect([first.code, first.retriable, first.schemaId]).toEqual(['SCHED_E_INCOMPATIBLE_SCHEMA', false, 5]);
    expect(second).not.toBe(first);
    expect(first.message).toContain('io.sched.v1.JobEvent cannot be read as io.sched.v1.Command');
  });

  it('refuses a writer that is not an Avro type', () => {
    const codec = commandCodec();
    codec.learnWriter(6, { toBuffer() {} });
    expect(caught(() => codec.decodeFramed(Buffer.from([0, 0, 0, 0, 6]), 6)).code).toBe(
      'SCHED_E_INCOMPATIBLE_SCHEMA',
    );
  });

  it('reports truncated records and trailing bytes as SCHED_E_UNDECODABLE', () => {
    const codec = commandCodec();
    const bytes = codec.encode(FULL_COMMANDS[0] as Command);
    expect(caught(() => codec.decodeFramed(bytes.subarray(0, bytes.length - 3), 41)).code).toBe(
      'SCHED_E_UNDECODABLE',
    );
    expect(caught(() => codec.decodeFramed(Buffer.concat([bytes, Buffer.from([0])]), 41)).code).toBe(
      'SCHED_E_UNDECODABLE',
    );
  });

  it('never hangs and only ever throws SCHED_E_UNDECODABLE on arbitrary bytes after a valid header', () => {
    const codec = commandCodec();
    const valid = FULL_COMMANDS.map((c) => codec.encode(c));
    const property = fc.property(
      fc.oneof(
        fc.uint8Array({ maxLength: 300 }),
        // Valid records with a few bytes flipped: the nastier case, deep inside real structure.
        fc
          .tuple(
            fc.integer({ min: 0, max: valid.length - 1 }),
            fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
          )
          .map(([i, flips]) => {
            const copy = Buffer.from(valid[i] as Buffer).subarray(5);
            for (const [at, byte] of flips) copy[at % Math.max(copy.length, 1)] = byte;
            return new Uint8Array(copy);
          }),
      ),
      (body) => {
        const bytes = Buffer.concat([Buffer.from([0, 0, 0, 0, 41]), Buffer.from(body)]);
        try {
          const value = codec.decodeFramed(bytes, 41);
          // Whatever decodes is a valid Command.
          expect(codec.type.isValid(value)).toBe(true);
        } catch (error) {
          expect(isContractsError(error, 'SCHED_E_UNDECODABLE')).toBe(true);
        }
      },
    );
    const started = Date.now();
    fc.assert(property, { numRuns: 3000, verbose: 1 });
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});
