import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { createAvroType } from './avro-types';

const apple = { type: 'record', name: 'Apple', fields: [{ name: 'n', type: 'int' }] };
const pear = { type: 'record', name: 'Pear', fields: [{ name: 'ripe', type: 'boolean' }] };
const basket = (fruit: unknown, extra: unknown[] = []) => ({
  type: 'record',
  name: 'Basket',
  namespace: 'x',
  fields: [{ name: 'fruit', type: fruit }, ...extra],
});

describe('TaggedUnionType', () => {
  const type = createAvroType(basket([apple, pear]));

  it('reads and writes { kind, value } with the Avro union encoding', () => {
    const value = { fruit: { kind: 'Pear', value: { ripe: true } } };
    const bytes = type.toBuffer(value);
    // Union index 1 (zigzag 2), then the boolean: identical to what any Avro writer produces.
    expect(bytes).toEqual(Buffer.from([2, 1]));
    expect(type.fromBuffer(bytes)).toEqual(value);
    const plain = avro.Type.forSchema(basket([apple, pear]) as never, { wrapUnions: true });
    expect(plain.fromBuffer(bytes)).toEqual({ fruit: { 'x.Pear': { ripe: true } } });
  });

  it('refuses an unknown kind, a missing value, and a wrapped value', () => {
    expect(type.isValid({ fruit: { kind: 'Plum', value: {} } })).toBe(false);
    expect(type.isValid({ fruit: { kind: 'Apple' } })).toBe(false);
    expect(type.isValid({ fruit: { 'x.Apple': { n: 1 } } })).toBe(false);
    expect(type.isValid({ fruit: null })).toBe(false);
    expect(() => type.toBuffer({ fruit: { kind: 'Plum', value: {} } })).toThrow(/Plum/);
  });

  it('supports a nullable union of records', () => {
    const nullable = createAvroType(basket(['null', apple, pear]));
    expect(nullable.fromBuffer(nullable.toBuffer({ fruit: null }))).toEqual({ fruit: null });
    const value = { fruit: { kind: 'Apple', value: { n: 3 } } };
    expect(nullable.fromBuffer(nullable.toBuffer(value))).toEqual(value);
  });

  it('leaves other unions to avsc: ["null", T] reads as T | null', () => {
    const optional = createAvroType(basket(['null', apple]));
    expect(optional.fromBuffer(optional.toBuffer({ fruit: { n: 1 } }))).toEqual({ fruit: { n: 1 } });
  });

  it('fails reading a union index that does not exist', () => {
    expect(() => type.fromBuffer(Buffer.from([8, 1]))).toThrow(/invalid union index/);
  });

  it('reads data of an older writer through a resolver, filling in defaults', () => {
    const appleV2 = {
      ...apple,
      fields: [...apple.fields, { name: 'color', type: 'string', default: 'red' }],
    };
    const reader = createAvroType(basket([appleV2, pear]));
    const oldWriter = createAvroType(basket([apple, pear]));
    const bytes = oldWriter.toBuffer({ fruit: { kind: 'Apple', value: { n: 4 } } });
    expect(reader.fromBuffer(bytes, reader.createResolver(oldWriter))).toEqual({
      fruit: { kind: 'Apple', value: { n: 4, color: 'red' } },
    });
  });

  it('reads data of a plain avsc writer (wrapped union) and of a writer with fewer branches', () => {
    const reader = createAvroType(basket([apple, pear]));
    const plain = avro.Type.forSchema(basket([apple]) as never);
    const bytes = plain.toBuffer({ fruit: { n: 9 } });
    expect(reader.fromBuffer(bytes, reader.createResolver(plain))).toEqual({
      fruit: { kind: 'Apple', value: { n: 9 } },
    });
  });

  it('cannot resolve a writer whose branch the reader dropped', () => {
    const reader = createAvroType(basket([apple]));
    expect(() => reader.createResolver(createAvroType(basket([apple, pear])))).toThrow();
  });

  it('refuses two branches with the same short name', () => {
    const other = { ...apple, namespace: 'y' };
    expect(() => createAvroType(basket([apple, other]))).toThrow(/two branches are named Apple/);
  });

  it('clones and generates random values in the tagged shape', () => {
    const value = { fruit: { kind: 'Apple', value: { n: 1 } } };
    expect(type.clone(value)).toEqual(value);
    const random = type.random() as unknown as { fruit: { kind: string } };
    expect(['Apple', 'Pear']).toContain(random.fruit.kind);
  });
});
