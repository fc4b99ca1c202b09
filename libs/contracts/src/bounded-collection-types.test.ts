import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { createAvroType } from './avro-types';
import { minEncodedBytes } from './bounded-collection-types';

/** Avro zigzag varint of a non-negative count (as a JS number, exact up to 2^53). */
function varint(n: number): number[] {
  let z = n * 2;
  const out: number[] = [];
  while (z >= 0x80) {
    out.push((z % 0x80) | 0x80);
    z = Math.floor(z / 0x80);
  }
  out.push(z);
  return out;
}

const withMap = {
  type: 'record',
  name: 'M',
  fields: [{ name: 'm', type: { type: 'map', values: 'string' } }],
};
const item = {
  type: 'record',
  name: 'I',
  fields: [
    { name: 'a', type: 'int' },
    { name: 'b', type: 'string' },
  ],
};
const withArray = {
  type: 'record',
  name: 'A',
  fields: [{ name: 'xs', type: { type: 'array', items: item } }],
};

describe('bounded arrays and maps', () => {
  it('decode ordinary values as avsc does', () => {
    const map = createAvroType(withMap);
    const array = createAvroType(withArray);
    const m = { m: { a: 'x', b: '' } };
    const a = {
      xs: [
        { a: 1, b: 'q' },
        { a: -2, b: '' },
      ],
    };
    expect(map.fromBuffer(map.toBuffer(m))).toEqual(m);
    expect(array.fromBuffer(array.toBuffer(a))).toEqual(a);
    // Byte for byte the same encoding as plain avsc.
    expect(array.toBuffer(a)).toEqual(avro.Type.forSchema(withArray as never).toBuffer(a));
  });

  it('refuse a map claiming 2^50 entries at once instead of looping', () => {
    const type = createAvroType(withMap);
    const started = Date.now();
    expect(() => type.fromBuffer(Buffer.from([...varint(2 ** 50), 2, 0x61]))).toThrow(/truncated/);
    expect(Date.now() - started).toBeLessThan(100);
  });

  it('refuse an array claiming more items than the bytes left can hold', () => {
    const type = createAvroType(withArray);
    // 3 items of at least 2 bytes each need 6 bytes; only 4 follow.
    expect(() => type.fromBuffer(Buffer.from([...varint(3), 2, 0, 4, 0]))).toThrow(/truncated/);
    expect(() => type.fromBuffer(Buffer.from([...varint(2 ** 31), 0]))).toThrow(/truncated/);
  });

  it('also bound reads through a resolver (older writer)', () => {
    const itemV2 = { ...item, fields: [...item.fields, { name: 'c', type: 'long', default: 0 }] };
    const reader = createAvroType({
      ...withArray,
      fields: [{ name: 'xs', type: { type: 'array', items: itemV2 } }],
    });
    const writer = createAvroType(withArray);
    const resolver = reader.createResolver(writer);
    const ok = writer.toBuffer({ xs: [{ a: 1, b: 'q' }] });
    expect(reader.fromBuffer(ok, resolver)).toEqual({ xs: [{ a: 1, b: 'q', c: 0 }] });
    expect(() => reader.fromBuffer(Buffer.from([...varint(2 ** 40), 0]), resolver)).toThrow(/truncated/);
  });

  it('know the smallest encoding of each type', () => {
    const size = (schema: unknown) => minEncodedBytes(createAvroType(schema));
    expect(size('null')).toBe(0);
    expect(size('double')).toBe(8);
    expect(size({ type: 'fixed', name: 'F', size: 16 })).toBe(16);
    expect(size(item)).toBe(2);
    expect(size(['null', 'string'])).toBe(1);
    expect(size({ type: 'record', name: 'E', fields: [] })).toBe(0);
  });
});
