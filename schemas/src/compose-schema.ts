import {
  type AvroField,
  type AvroNamedSchema,
  type AvroRecordSchema,
  type AvroSchema,
  isPrimitive,
  qualify,
} from './avro-schema';

/**
 * Builds the self-contained schema of `rootFullName` from a library of named types (one per `.avsc`
 * file): every reference to a library type is replaced by the type's full definition at its first
 * occurrence in document order, and by its full name afterwards, which is how an Avro parser reads a
 * schema. The result is what the registry stores and what the released snapshots hold.
 *
 * References may be short names resolved against the enclosing namespace; the output uses full names
 * only, and drops a nested `namespace` that merely repeats the inherited one. A named type defined inline inside another file (an enum of a single record, say) cannot be
 * referenced from a third file before that file is inlined: give shared types their own file.
 *
 * Throws on an unknown name, a name defined twice, or a root that is not a record.
 */
export function composeSchema(
  rootFullName: string,
  library: ReadonlyMap<string, AvroNamedSchema>,
): AvroRecordSchema {
  const root = library.get(rootFullName);
  if (root === undefined || root.type !== 'record') {
    throw new Error(`composeSchema: ${rootFullName} is not a record in the schema library`);
  }
  const defined = new Set<string>();

  const define = (fullName: string): void => {
    if (defined.has(fullName)) {
      throw new Error(`composeSchema(${rootFullName}): type ${fullName} is defined twice`);
    }
    defined.add(fullName);
  };

  const walk = (node: AvroSchema, namespace: string | undefined): AvroSchema => {
    if (typeof node === 'string') {
      if (isPrimitive(node)) return node;
      const fullName = qualify(node, namespace);
      if (defined.has(fullName)) return fullName;
      const definition = library.get(fullName);
      if (definition === undefined) {
        throw new Error(`composeSchema(${rootFullName}): unknown type ${fullName}`);
      }
      return walk(definition, namespace);
    }
    if (Array.isArray(node)) return node.map((branch: AvroSchema) => walk(branch, namespace));
    // Narrowed by hand: TS cannot exclude the readonly array branch through Array.isArray.
    const complex = node as Exclude<AvroSchema, string | readonly AvroSchema[]>;
    switch (complex.type) {
      case 'record': {
        const record = complex as AvroRecordSchema;
        const fullName = qualify(record.name, record.namespace ?? namespace);
        define(fullName);
        const inner = namespaceOf(fullName);
        return {
          ...withoutInheritedNamespace(record, namespace),
          fields: record.fields.map((field): AvroField => ({ ...field, type: walk(field.type, inner) })),
        };
      }
      case 'enum':
      case 'fixed': {
        const named = complex as AvroNamedSchema;
        define(qualify(named.name, named.namespace ?? namespace));
        return withoutInheritedNamespace(named, namespace);
      }
      case 'array':
        return { type: 'array', items: walk((complex as { items: AvroSchema }).items, namespace) };
      case 'map':
        return { type: 'map', values: walk((complex as { values: AvroSchema }).values, namespace) };
      default:
        // `{"type": "long", "logicalType": ...}` stays as written; `{"type": "a.Named"}` is a reference.
        return isPrimitive(complex.type) ? { ...complex } : walk(complex.type, namespace);
    }
  };

  return walk(root, undefined) as AvroRecordSchema;
}

/**
 * Drops a `namespace` equal to the one the type inherits where it is inlined. Same meaning, and the
 * form the registry (Avro's Java parser) hands back, so a schema read back from the registry equals
 * the composed one.
 */
function withoutInheritedNamespace<T extends AvroNamedSchema>(schema: T, inherited: string | undefined): T {
  if (inherited === undefined || schema.namespace !== inherited) return { ...schema };
  const { namespace: _dropped, ...rest } = schema;
  return rest as T;
}

function namespaceOf(fullName: string): string | undefined {
  const dot = fullName.lastIndexOf('.');
  return dot < 0 ? undefined : fullName.slice(0, dot);
}
