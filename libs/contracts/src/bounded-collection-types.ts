import avro from 'avsc';
import type { Type } from 'avsc';
import type { AvscReadable, AvscRecordInternals, AvscResolver, AvscTap } from './avsc-internals';

/**
 * Arrays and maps that refuse a block count larger than the bytes left could hold.
 *
 * Why: avsc trusts the element count written before each block. A corrupt or hostile record (a
 * producer writing garbage after a valid schema id) can claim 2^40 entries: avsc then loops that
 * many times past the end of the buffer, or allocates a huge array, and the consumer hangs or dies
 * instead of rejecting one record. Every map entry takes at least one byte (its key length), and an
 * array item at least `minEncodedBytes(items)`, so a count that cannot fit in the remaining bytes
 * is refused up front: the tap is marked overrun and the decode fails as "truncated buffer".
 * Arrays of zero-byte items (e.g. `array<null>`) cannot be bounded this way and keep avsc's
 * behaviour; none of our schemas has one.
 *
 * Reading with a resolver (writer schema ≠ reader schema) goes through the same `_read` (avsc
 * installs the reader type's `_read` on the resolver), with the bound taken from the writer's item
 * type, which is what is on the wire.
 */
const minItemBytes = new WeakMap<object, number>();

/** Fewest bytes any value of `type` takes in Avro binary encoding (0 when a value can be empty). */
export function minEncodedBytes(type: Type, visiting: Set<Type> = new Set()): number {
  if (visiting.has(type)) return 0; // Recursive record: count it once.
  const name = type.typeName;
  if (name.startsWith('logical:'))
    return minEncodedBytes((type as avro.types.LogicalType).underlyingType, visiting);
  if (name.startsWith('union:')) return 1;
  switch (name) {
    case 'null':
      return 0;
    case 'float':
      return 4;
    case 'double':
      return 8;
    case 'fixed':
      return (type as avro.types.FixedType).size;
    case 'record':
    case 'error': {
      visiting.add(type);
      let total = 0;
      for (const field of (type as AvscRecordInternals).fields)
        total += minEncodedBytes(field.type, visiting);
      visiting.delete(type);
      return total;
    }
    default:
      // boolean, int, long, bytes, string, enum, array, map: at least one byte.
      return 1;
  }
}

/** Reads one block count the way avsc does (a negative count is followed by the block's byte size). */
function readBlockCount(tap: AvscTap): number {
  let n = tap.readLong();
  if (n < 0) {
    n = -n;
    tap.skipLong();
  }
  return n;
}

function fits(tap: AvscTap, count: number, bytesPerItem: number): boolean {
  return bytesPerItem === 0 || count * bytesPerItem <= tap.buf.length - tap.pos;
}

export class BoundedArrayType extends avro.types.ArrayType {
  constructor(schema: unknown, opts?: unknown) {
    super(schema as never, opts);
    minItemBytes.set(this, minEncodedBytes(this.itemsType));
  }

  /** `this` is the type, or a resolver that avsc gave this method to (see `_update`). */
  _read(this: { itemsType: AvscReadable }, tap: AvscTap): unknown[] {
    const items = this.itemsType;
    const perItem = minItemBytes.get(this) ?? 0;
    let values: unknown[] | undefined;
    let i = 0;
    let n: number;
    while ((n = readBlockCount(tap))) {
      if (!fits(tap, n, perItem)) {
        tap._invalidate();
        return [];
      }
      values ??= new Array<unknown>(n);
      while (n--) values[i++] = items._read(tap);
    }
    return values ?? [];
  }

  _update(resolver: AvscResolver, writerType: Type, opts: unknown): void {
    (
      avro.types.ArrayType.prototype as unknown as { _update: (r: AvscResolver, w: Type, o: unknown) => void }
    )._update.call(this, resolver, writerType, opts);
    if (resolver._read !== null) {
      minItemBytes.set(resolver, minEncodedBytes((writerType as avro.types.ArrayType).itemsType));
    }
  }
}

export class BoundedMapType extends avro.types.MapType {
  constructor(schema: unknown, opts?: unknown) {
    super(schema as never, opts);
  }

  /** `this` is the type or a resolver (see BoundedArrayType). Each entry is at least its key length byte. */
  _read(this: { valuesType: AvscReadable }, tap: AvscTap): Record<string, unknown> {
    const values = this.valuesType;
    const map: Record<string, unknown> = {};
    let n: number;
    while ((n = readBlockCount(tap))) {
      if (!fits(tap, n, 1)) {
        tap._invalidate();
        return map;
      }
      while (n--) {
        const key = tap.readString();
        const value = values._read(tap);
        if (key !== undefined) map[key] = value;
      }
    }
    return map;
  }
}
