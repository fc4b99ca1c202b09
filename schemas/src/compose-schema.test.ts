import { describe, expect, it } from 'vitest';
import type { AvroNamedSchema } from './avro-schema';
import { composeSchema } from './compose-schema';

function library(...schemas: AvroNamedSchema[]): Map<string, AvroNamedSchema> {
  return new Map(schemas.map((s) => [`${s.namespace ?? 'x'}.${s.name}`, s]));
}

const color: AvroNamedSchema = { type: 'enum', name: 'Color', namespace: 'x', symbols: ['RED', 'BLUE'] };
const paint: AvroNamedSchema = {
  type: 'record',
  name: 'Paint',
  namespace: 'x',
  fields: [{ name: 'color', type: 'Color' }],
};
const order: AvroNamedSchema = {
  type: 'record',
  name: 'Order',
  namespace: 'x',
  fields: [
    { name: 'first', type: 'x.Paint' },
    { name: 'second', type: ['null', 'Paint'], default: null },
    { name: 'shades', type: { type: 'array', items: 'Color' } },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
  ],
};

describe('composeSchema', () => {
  it('inlines each referenced file at its first use and refers to it by full name afterwards', () => {
    const composed = composeSchema('x.Order', library(color, paint, order));
    const { namespace: _p, ...inlinedPaint } = paint;
    const { namespace: _c, ...inlinedColor } = color;
    expect(composed.namespace).toBe('x');
    expect(composed.fields.map((f) => f.type)).toEqual([
      { ...inlinedPaint, fields: [{ name: 'color', type: inlinedColor }] },
      ['null', 'x.Paint'],
      { type: 'array', items: 'x.Color' },
      { type: 'long', logicalType: 'timestamp-millis' },
    ]);
  });

  it('keeps a nested namespace that differs from the inherited one', () => {
    const foreign: AvroNamedSchema = { type: 'enum', name: 'Tone', namespace: 'y', symbols: ['DARK'] };
    const holder: AvroNamedSchema = {
      type: 'record',
      name: 'Holder',
      namespace: 'x',
      fields: [{ name: 't', type: 'y.Tone' }],
    };
    const lib = new Map<string, AvroNamedSchema>([
      ['y.Tone', foreign],
      ['x.Holder', holder],
    ]);
    expect(composeSchema('x.Holder', lib).fields[0]?.type).toEqual(foreign);
  });

  it('does not modify the library', () => {
    const lib = library(color, paint, order);
    const before = JSON.stringify([...lib.values()]);
    composeSchema('x.Order', lib);
    expect(JSON.stringify([...lib.values()])).toBe(before);
  });

  it('refuses an unknown reference, naming it', () => {
    expect(() => composeSchema('x.Paint', library(paint))).toThrow(/unknown type x\.Color/);
  });

  it('refuses a type defined twice', () => {
    const twice: AvroNamedSchema = {
      type: 'record',
      name: 'Twice',
      namespace: 'x',
      fields: [
        { name: 'a', type: 'Color' },
        { name: 'b', type: { type: 'enum', name: 'Color', symbols: ['GREEN'] } },
      ],
    };
    expect(() => composeSchema('x.Twice', library(color, twice))).toThrow(/x\.Color is defined twice/);
  });

  it('refuses a root that is not a record', () => {
    expect(() => composeSchema('x.Color', library(color))).toThrow(/not a record/);
  });
});
