import avro from 'avsc';
import type { Type } from 'avsc';
import type { AvscResolver, AvscTap, AvscUnionInternals } from './avsc-internals';

/** Marker put on a union schema (a JSON array) to make avsc build it as a TaggedUnionType. */
export const TAGGED_UNION_LOGICAL_TYPE = 'sched-tagged-union';

/** The in-memory shape of a tagged union branch. */
export interface TaggedBranch {
  readonly kind: string;
  readonly value: unknown;
}

/**
 * An Avro union of records, seen from TypeScript as `{ kind: '<RecordName>', value: record }`.
 *
 * Why: avsc can only read a union of several records as a *wrapped* union,
 * `{ 'io.sched.v1.CreateJob': {...} }`, which TypeScript can narrow only with `in` checks on
 * namespaced keys. A `kind` tag gives a discriminated union that `switch` narrows and checks for
 * exhaustiveness. The wire format is plain Avro: the tag lives only in memory, so producers in any
 * language, Connect converters and the registry see an ordinary union.
 *
 * How: a logical type whose underlying type is the wrapped union. Reading and writing go straight to
 * the branch types (no intermediate wrapper object); validation, cloning and random values go
 * through `_toValue`/`_fromValue`; schema resolution (`_update`) resolves the whole union with avsc's
 * own rules and then re-tags, so an older writer version of a branch record is read with the
 * reader's defaults filled in. `kind` is the branch record's short name, which must be unique within
 * the union (checked here).
 *
 * Thread safety: instances are immutable after construction; share them freely.
 */
export class TaggedUnionType extends avro.types.LogicalType {
  /** Full record name (or 'null') per union index. */
  private readonly branchNames: readonly string[];
  /** Short record name per union index; undefined for the null branch. */
  private readonly kinds: readonly (string | undefined)[];
  private readonly indexByKind: ReadonlyMap<string, number>;
  private readonly nullIndex: number | undefined;

  constructor(schema: unknown, opts?: unknown) {
    super(schema as never, opts);
    const union = this.underlyingType as AvscUnionInternals;
    this.branchNames = union.types.map((type) => (type.typeName === 'null' ? 'null' : (type.name ?? '')));
    this.kinds = this.branchNames.map((name) =>
      name === 'null' ? undefined : name.slice(name.lastIndexOf('.') + 1),
    );
    const indexByKind = new Map<string, number>();
    this.kinds.forEach((kind, index) => {
      if (kind === undefined) return;
      if (indexByKind.has(kind)) throw new Error(`tagged union: two branches are named ${kind}`);
      indexByKind.set(kind, index);
    });
    this.indexByKind = indexByKind;
    const nullIndex = this.branchNames.indexOf('null');
    this.nullIndex = nullIndex < 0 ? undefined : nullIndex;
  }

  /** Wrapped union value (`{ 'a.B': v }` or null) → tagged (`{ kind: 'B', value: v }` or null). */
  protected override _fromValue(wrapped: unknown): TaggedBranch | null {
    if (wrapped === null) return null;
    const record = wrapped as Record<string, unknown>;
    for (const name of Object.keys(record)) {
      return { kind: name.slice(name.lastIndexOf('.') + 1), value: record[name] };
    }
    throw new Error('tagged union: empty wrapped value');
  }

  /** Tagged → wrapped; undefined for anything that is not a valid tagged value (avsc reads that as invalid). */
  protected override _toValue(tagged: unknown): Record<string, unknown> | null | undefined {
    if (tagged === null) return this.nullIndex === undefined ? undefined : null;
    if (typeof tagged !== 'object') return undefined;
    const { kind, value } = tagged as Partial<TaggedBranch>;
    const index = typeof kind === 'string' ? this.indexByKind.get(kind) : undefined;
    const name = index === undefined ? undefined : this.branchNames[index];
    return name === undefined ? undefined : { [name]: value };
  }

  /** Unused: `_update` below handles every writer type. Required by avsc's abstract class. */
  protected override _resolve(): undefined {
    return undefined;
  }

  /** Hot path: read the branch index and the record, build the tagged value, nothing else. */
  _read(tap: AvscTap): TaggedBranch | null {
    const index = tap.readLong();
    const kind = this.kinds[index];
    if (kind === undefined) {
      if (index === this.nullIndex) return null;
      throw new Error(`invalid union index: ${index}`);
    }
    const branch = (this.underlyingType as AvscUnionInternals).types[index];
    return { kind, value: branch?._read(tap) };
  }

  /** Hot path: write the branch index and the record without building a wrapped value. */
  _write(tap: AvscTap, tagged: unknown): void {
    if (tagged === null && this.nullIndex !== undefined) {
      tap.writeLong(this.nullIndex);
      return;
    }
    const { kind, value } = (tagged ?? {}) as Partial<TaggedBranch>;
    const index = typeof kind === 'string' ? this.indexByKind.get(kind) : undefined;
    const branch = index === undefined ? undefined : (this.underlyingType as AvscUnionInternals).types[index];
    if (index === undefined || branch === undefined) {
      throw new Error(
        `invalid tagged union value: kind ${JSON.stringify(kind)} is not one of ${[...this.indexByKind.keys()].join(', ')}`,
      );
    }
    tap.writeLong(index);
    branch._write(tap, value);
  }

  /**
   * Schema resolution: read data written with `writerType` (this tagged union built by an older
   * schema, a plain union, or a single record) into this union's shape.
   */
  _update(resolver: AvscResolver, writerType: Type, opts: unknown): void {
    const writer = avro.Type.isType(writerType, `logical:${TAGGED_UNION_LOGICAL_TYPE}`)
      ? (writerType as avro.types.LogicalType).underlyingType
      : writerType;
    const inner = this.underlyingType.createResolver(writer, opts as object) as unknown as AvscResolver;
    const read = inner._read;
    if (read === null) return;
    resolver._read = (tap) => this._fromValue(read.call(inner, tap));
  }
}

/**
 * Part of the avsc `typeHook` (see avro-types.ts): a union whose non-null branches are two or more
 * records becomes a TaggedUnionType; anything else is left to avsc. The same rule decides which
 * unions the type generator (schemas/src/type-generator.ts) emits as tagged unions.
 */
export function taggedUnionFor(
  schema: unknown,
  opts: { registry?: Record<string, Type>; namespace?: string },
): Type | undefined {
  if (!Array.isArray(schema)) return undefined;
  if ((schema as { logicalType?: string }).logicalType === TAGGED_UNION_LOGICAL_TYPE) return undefined;
  const branches = (schema as unknown[]).filter((branch) => branch !== 'null');
  if (branches.length < 2 || !branches.every((branch) => isRecordBranch(branch, opts))) return undefined;
  const marked = Object.assign([...(schema as unknown[])], { logicalType: TAGGED_UNION_LOGICAL_TYPE });
  return new TaggedUnionType(marked, opts);
}

function isRecordBranch(
  branch: unknown,
  opts: { registry?: Record<string, Type>; namespace?: string },
): boolean {
  if (avro.Type.isType(branch)) return avro.Type.isType(branch, 'record');
  if (typeof branch === 'string') {
    const fullName =
      branch.includes('.') || opts.namespace === undefined ? branch : `${opts.namespace}.${branch}`;
    const known = opts.registry?.[fullName] ?? opts.registry?.[branch];
    return known !== undefined && avro.Type.isType(known, 'record');
  }
  return typeof branch === 'object' && branch !== null && (branch as { type?: unknown }).type === 'record';
}
