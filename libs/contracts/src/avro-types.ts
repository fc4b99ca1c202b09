import avro from 'avsc';
import type { ForSchemaOptions, Type } from 'avsc';
import { BoundedArrayType, BoundedMapType } from './bounded-collection-types';
import { taggedUnionFor } from './tagged-union-type';

/**
 * avsc's `typeHook`, applied to every schema this package parses: our own reader schemas and the
 * writer schemas fetched from the registry (the registry client gets the same options), so both
 * sides of a resolution are built the same way.
 */
export function contractTypeHook(schema: unknown, opts: ForSchemaOptions): Type | undefined {
  if (Array.isArray(schema)) return taggedUnionFor(schema, opts);
  if (typeof schema === 'object' && schema !== null && !avro.Type.isType(schema)) {
    const type = (schema as { type?: unknown }).type;
    if (type === 'array') return new BoundedArrayType(schema, opts);
    if (type === 'map') return new BoundedMapType(schema, opts);
  }
  return undefined;
}

/**
 * Options for `avro.Type.forSchema`. A fresh object per call: avsc stores its name registry in the
 * options object it is given.
 *
 * - `wrapUnions: 'auto'`: `["null", T]` reads as `T | null`; a union of records is taken over by the
 *   hook (tagged); any other ambiguous union would be wrapped, which the type generator refuses, so
 *   none exists.
 * - No `logicalTypes`: `timestamp-millis` stays a number of epoch milliseconds, as the generated
 *   types say. Longs are JS numbers; avsc throws on a value beyond ±2^53 rather than lose precision.
 */
export function avroTypeOptions(): Partial<ForSchemaOptions> {
  return { wrapUnions: 'auto', typeHook: contractTypeHook };
}

/** An avsc type for a self-contained schema, built with the contract options. */
export function createAvroType(schema: unknown): Type {
  return avro.Type.forSchema(schema as never, avroTypeOptions());
}
