import { describe, expect, it } from 'vitest';
import { isContractsError } from './contracts-error';
import { readSchemaId, writeHeader } from './wire-format';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isContractsError(error) ? `${error.code}/${error.retriable}` : String(error);
  }
  return undefined;
}

describe('Confluent wire format', () => {
  it('reads the big-endian schema id after the magic byte', () => {
    const header = Buffer.alloc(5);
    writeHeader(header, 0x01020304);
    expect([...header]).toEqual([0, 1, 2, 3, 4]);
    expect(readSchemaId(Buffer.concat([header, Buffer.from([9])]))).toBe(0x01020304);
  });

  it('refuses records that are not framed, as SCHED_E_UNDECODABLE (not retriable)', () => {
    expect(codeOf(() => readSchemaId(null))).toBe('SCHED_E_UNDECODABLE/false');
    expect(codeOf(() => readSchemaId(Buffer.from([0, 0, 0, 1])))).toBe('SCHED_E_UNDECODABLE/false');
    expect(codeOf(() => readSchemaId(Buffer.from('{"json":true}')))).toBe('SCHED_E_UNDECODABLE/false');
  });
});
