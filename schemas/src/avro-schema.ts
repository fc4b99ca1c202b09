/**
 * The JSON shapes of Avro schemas (Avro 1.11 specification), as far as this project uses them.
 * These describe `.avsc` file contents; they carry no runtime behaviour.
 */

export const AVRO_PRIMITIVES = [
  'null',
  'boolean',
  'int',
  'long',
  'float',
  'double',
  'bytes',
  'string',
] as const;
export type AvroPrimitive = (typeof AVRO_PRIMITIVES)[number];

export interface AvroField {
  readonly name: string;
  readonly type: AvroSchema;
  readonly doc?: string;
  readonly default?: unknown;
  readonly aliases?: readonly string[];
  readonly order?: 'ascending' | 'descending' | 'ignore';
}

export interface AvroRecordSchema {
  readonly type: 'record';
  readonly name: string;
  readonly namespace?: string;
  readonly doc?: string;
  readonly aliases?: readonly string[];
  readonly fields: readonly AvroField[];
}

export interface AvroEnumSchema {
  readonly type: 'enum';
  readonly name: string;
  readonly namespace?: string;
  readonly doc?: string;
  readonly aliases?: readonly string[];
  readonly symbols: readonly string[];
  /** Symbol a reader uses for a writer symbol it does not know (Avro 1.9+). */
  readonly default?: string;
}

export interface AvroFixedSchema {
  readonly type: 'fixed';
  readonly name: string;
  readonly namespace?: string;
  readonly aliases?: readonly string[];
  readonly size: number;
}

export interface AvroArraySchema {
  readonly type: 'array';
  readonly items: AvroSchema;
}

export interface AvroMapSchema {
  readonly type: 'map';
  readonly values: AvroSchema;
}

/** `{"type": "long", "logicalType": "timestamp-millis"}` and friends, or `{"type": "some.Named"}`. */
export interface AvroWrappedSchema {
  readonly type: string;
  readonly logicalType?: string;
}

export type AvroNamedSchema = AvroRecordSchema | AvroEnumSchema | AvroFixedSchema;

/** A string is a primitive or a reference to a named type; an array is a union. */
export type AvroSchema =
  string | readonly AvroSchema[] | AvroNamedSchema | AvroArraySchema | AvroMapSchema | AvroWrappedSchema;

export function isPrimitive(name: string): name is AvroPrimitive {
  return (AVRO_PRIMITIVES as readonly string[]).includes(name);
}

export function isNamedSchema(schema: AvroSchema): schema is AvroNamedSchema {
  return (
    typeof schema === 'object' &&
    !Array.isArray(schema) &&
    'type' in schema &&
    (schema.type === 'record' || schema.type === 'enum' || schema.type === 'fixed')
  );
}

export function isRecordSchema(schema: AvroSchema): schema is AvroRecordSchema {
  return isNamedSchema(schema) && schema.type === 'record';
}

export function isUnionSchema(schema: AvroSchema): schema is readonly AvroSchema[] {
  return Array.isArray(schema);
}

/** Full name of a named type per the Avro name rules: a dotted name is already full. */
export function qualify(name: string, namespace: string | undefined): string {
  if (name.includes('.') || isPrimitive(name) || namespace === undefined || namespace === '') return name;
  return `${namespace}.${name}`;
}

/** The part of a full name after the last dot: `io.sched.v1.CreateJob` → `CreateJob`. */
export function shortName(fullName: string): string {
  const dot = fullName.lastIndexOf('.');
  return dot < 0 ? fullName : fullName.slice(dot + 1);
}

/** Freezes a JSON value and everything under it, so a shared schema object cannot be edited in place. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
