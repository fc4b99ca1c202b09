import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import {
  type AvroNamedSchema,
  type AvroRecordSchema,
  type AvroSchema,
  isPrimitive,
  qualify,
  shortName,
} from './avro-schema';
import { CONTRACT_SCHEMAS, type ContractSchema } from './contract-schemas';
import { SCHEMAS_DIR } from './schema-files';

/** Where `npm run schemas:gen` writes the TypeScript types of the contracts. */
export const GENERATED_TYPES_FILE = join(SCHEMAS_DIR, '..', 'libs', 'contracts', 'src', 'generated-types.ts');

/**
 * TypeScript source for the types of the given contracts (unformatted; see renderGeneratedTypes).
 *
 * The mapping mirrors how `@sched/contracts` builds its avsc types, and changing one means changing
 * the other (the round-trip test in libs/contracts fails if they drift):
 * - `int`, `long`, `float`, `double` → `number` (avsc reads `long` as a number and throws beyond 2^53;
 *   logical types such as `timestamp-millis` are not registered, so they stay numbers too);
 * - `bytes`, `fixed` → `Buffer`; `map<T>` → `Record<string, T>`; `array<T>` → `T[]`;
 * - enum → string-literal union plus a `<NAME>_SYMBOLS` array;
 * - `["null", T]` → `T | null` (avsc's unwrapped union);
 * - a union of two or more records (optionally with null) → a tagged union
 *   `{ kind: '<RecordName>'; value: <Record> }`, named `<Record><Field>` after the field holding it;
 *   `@sched/contracts` reads and writes exactly this shape through a logical type;
 * - any other union is refused (avsc would pick a representation the types here do not describe).
 *
 * Every record `X` also gets `XInput`, the producer-side shape, where fields with a schema default are
 * optional (avsc writes the default for an `undefined` field).
 */
export function generateTypes(contracts: readonly ContractSchema[]): string {
  const generator = new TypeGenerator();
  for (const contract of contracts) generator.collect(contract.schema, undefined);
  return generator.render(contracts);
}

/** generateTypes(CONTRACT_SCHEMAS) formatted with the repository's Prettier settings. */
export async function renderGeneratedTypes(): Promise<string> {
  const config = (await resolveConfig(GENERATED_TYPES_FILE)) ?? {};
  return format(generateTypes(CONTRACT_SCHEMAS), { ...config, filepath: GENERATED_TYPES_FILE });
}

interface TaggedUnion {
  readonly tsName: string;
  readonly nullable: boolean;
  /** Full names of the branch records, in union order. */
  readonly branches: readonly string[];
  readonly where: string;
}

interface Definition {
  readonly fullName: string;
  readonly namespace: string | undefined;
  readonly schema: AvroNamedSchema;
}

const PRIMITIVE_TS: Record<string, string> = {
  null: 'null',
  boolean: 'boolean',
  int: 'number',
  long: 'number',
  float: 'number',
  double: 'number',
  bytes: 'Buffer',
  string: 'string',
};

class TypeGenerator {
  private readonly definitions = new Map<string, Definition>();
  private readonly tsNames = new Map<string, string>();
  private readonly unionsByRecord = new Map<string, TaggedUnion[]>();

  /** First pass: every named definition, in document order, so references can be resolved later. */
  collect(schema: AvroSchema, namespace: string | undefined): void {
    if (typeof schema === 'string') return;
    if (Array.isArray(schema)) {
      for (const branch of schema as readonly AvroSchema[]) this.collect(branch, namespace);
      return;
    }
    const node = schema as Exclude<AvroSchema, string | readonly AvroSchema[]>;
    switch (node.type) {
      case 'record':
      case 'enum':
      case 'fixed': {
        const named = node as AvroNamedSchema;
        const fullName = qualify(named.name, named.namespace ?? namespace);
        const inner = fullName.includes('.') ? fullName.slice(0, fullName.lastIndexOf('.')) : undefined;
        const previous = this.definitions.get(fullName);
        if (previous !== undefined) {
          if (JSON.stringify(previous.schema) !== JSON.stringify(named)) {
            throw new Error(`codegen: ${fullName} has two different definitions`);
          }
          return;
        }
        const tsName = shortName(fullName);
        const clash = this.tsNames.get(tsName);
        if (clash !== undefined)
          throw new Error(`codegen: ${fullName} and ${clash} share the name ${tsName}`);
        this.tsNames.set(tsName, fullName);
        this.definitions.set(fullName, { fullName, namespace: inner, schema: named });
        if (named.type === 'record') {
          for (const field of named.fields) this.collect(field.type, inner);
        }
        return;
      }
      case 'array':
        this.collect((node as { items: AvroSchema }).items, namespace);
        return;
      case 'map':
        this.collect((node as { values: AvroSchema }).values, namespace);
        return;
      default:
        if (!isPrimitive(node.type)) this.collect(node.type, namespace);
    }
  }

  render(contracts: readonly ContractSchema[]): string {
    const out: string[] = [
      '// Generated by `npm run schemas:gen` (schemas/src/codegen.ts) from schemas/avro/*.avsc.',
      '// Do not edit by hand: change the .avsc files and regenerate. See schemas/src/type-generator.ts',
      '// for how Avro maps to these types.',
      '',
    ];
    for (const definition of this.definitions.values()) {
      const { schema } = definition;
      if (schema.type === 'record') this.renderRecord(definition, schema, out);
      else if (schema.type === 'enum') this.renderEnum(schema, out);
      else out.push(`export type ${schema.name} = Buffer;`, '');
    }
    out.push('/** Decoded value type of each registered subject. */', 'export interface SubjectValues {');
    for (const contract of contracts) out.push(`  '${contract.subject}': ${contract.name};`);
    out.push('}', '');
    return out.join('\n');
  }

  private renderRecord(definition: Definition, record: AvroRecordSchema, out: string[]): void {
    const name = shortName(definition.fullName);
    const unions: TaggedUnion[] = [];
    this.unionsByRecord.set(definition.fullName, unions);
    const fields = record.fields.map((field) => ({
      field,
      output: this.expr(field.type, definition.namespace, 'output', {
        record: name,
        field: field.name,
        unions,
      }),
      input: this.expr(field.type, definition.namespace, 'input', {
        record: name,
        field: field.name,
        unions: [],
      }),
    }));

    out.push(...docComment(record.doc, ''), `export interface ${name} {`);
    for (const { field, output } of fields) {
      out.push(...docComment(field.doc, '  '), `  ${field.name}: ${output};`);
    }
    out.push('}', '');

    out.push(
      ...docComment(
        `Producer-side shape of {@link ${name}}: a field with a schema default may be omitted and the default is written.`,
        '',
      ),
      `export interface ${name}Input {`,
    );
    for (const { field, input } of fields) {
      const optional = field.default !== undefined ? '?' : '';
      out.push(`  ${field.name}${optional}: ${input};`);
    }
    out.push('}', '');

    for (const union of unions) this.renderTaggedUnion(union, out);
  }

  private renderTaggedUnion(union: TaggedUnion, out: string[]): void {
    const nullable = union.nullable ? ' | null' : '';
    const variant = (fullName: string, suffix: string): string =>
      `{ kind: '${shortName(fullName)}'; value: ${shortName(fullName)}${suffix} }`;
    out.push(
      ...docComment(
        `The union in ${union.where}, tagged: \`kind\` is the branch record's name, \`value\` the record.`,
        '',
      ),
      `export type ${union.tsName} = ${union.branches.map((b) => variant(b, '')).join(' | ')}${nullable};`,
      '',
      `/** Producer-side shape of {@link ${union.tsName}}. */`,
      `export type ${union.tsName}Input = ${union.branches.map((b) => variant(b, 'Input')).join(' | ')}${nullable};`,
      '',
      `export type ${union.tsName}Kind = NonNullable<${union.tsName}>['kind'];`,
      '',
      `/** Record type of each \`kind\` of {@link ${union.tsName}}. */`,
      `export interface ${union.tsName}ByKind {`,
      ...union.branches.map((b) => `  ${shortName(b)}: ${shortName(b)};`),
      '}',
      '',
      `export const ${constantCase(union.tsName)}_KINDS: readonly ${union.tsName}Kind[] = [${union.branches
        .map((b) => `'${shortName(b)}'`)
        .join(', ')}];`,
      '',
    );
  }

  private renderEnum(schema: Extract<AvroNamedSchema, { type: 'enum' }>, out: string[]): void {
    out.push(
      ...docComment(schema.doc, ''),
      `export type ${schema.name} = ${schema.symbols.map((s) => `'${s}'`).join(' | ')};`,
      '',
      `export const ${constantCase(schema.name)}_SYMBOLS: readonly ${schema.name}[] = [${schema.symbols
        .map((s) => `'${s}'`)
        .join(', ')}];`,
      '',
    );
  }

  private expr(
    schema: AvroSchema,
    namespace: string | undefined,
    mode: 'output' | 'input',
    context: { record: string; field: string; unions: TaggedUnion[] },
  ): string {
    if (typeof schema === 'string') {
      const primitive = PRIMITIVE_TS[schema];
      if (primitive !== undefined) return primitive;
      return this.reference(qualify(schema, namespace), mode);
    }
    if (Array.isArray(schema)) return this.union(schema as readonly AvroSchema[], namespace, mode, context);
    const node = schema as Exclude<AvroSchema, string | readonly AvroSchema[]>;
    switch (node.type) {
      case 'record':
      case 'enum':
      case 'fixed': {
        const named = node as AvroNamedSchema;
        return this.reference(qualify(named.name, named.namespace ?? namespace), mode);
      }
      case 'array': {
        const items = this.expr((node as { items: AvroSchema }).items, namespace, mode, context);
        return /^[A-Za-z0-9_]+$/.test(items) ? `${items}[]` : `Array<${items}>`;
      }
      case 'map':
        return `Record<string, ${this.expr((node as { values: AvroSchema }).values, namespace, mode, context)}>`;
      default:
        return this.expr(node.type, namespace, mode, context);
    }
  }

  private union(
    branches: readonly AvroSchema[],
    namespace: string | undefined,
    mode: 'output' | 'input',
    context: { record: string; field: string; unions: TaggedUnion[] },
  ): string {
    const nullable = branches.includes('null');
    const others = branches.filter((branch) => branch !== 'null');
    const where = `${context.record}.${context.field}`;
    const [only] = others;
    if (others.length === 1 && only !== undefined) {
      const inner = this.expr(only, namespace, mode, context);
      return nullable ? `${inner} | null` : inner;
    }
    const records = others.map((branch) => this.recordName(branch, namespace));
    if (others.length < 2 || records.some((name) => name === undefined)) {
      throw new Error(
        `codegen: unsupported union in ${where}: only ["null", T] and unions of records are mapped`,
      );
    }
    const tsName = `${context.record}${context.field.charAt(0).toUpperCase()}${context.field.slice(1)}`;
    context.unions.push({ tsName, nullable, branches: records as string[], where });
    return mode === 'input' ? `${tsName}Input` : tsName;
  }

  private recordName(branch: AvroSchema, namespace: string | undefined): string | undefined {
    let fullName: string | undefined;
    if (typeof branch === 'string') fullName = isPrimitive(branch) ? undefined : qualify(branch, namespace);
    else if (!Array.isArray(branch) && (branch as { type: string }).type === 'record') {
      const record = branch as AvroRecordSchema;
      fullName = qualify(record.name, record.namespace ?? namespace);
    }
    if (fullName === undefined) return undefined;
    return this.definitions.get(fullName)?.schema.type === 'record' ? fullName : undefined;
  }

  private reference(fullName: string, mode: 'output' | 'input'): string {
    const definition = this.definitions.get(fullName);
    if (definition === undefined) throw new Error(`codegen: unknown type ${fullName}`);
    const name = shortName(fullName);
    return definition.schema.type === 'record' && mode === 'input' ? `${name}Input` : name;
  }
}

/** `CommandBody` → `COMMAND_BODY`. */
function constantCase(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** A JSDoc block for `text`, wrapped at about 100 columns; nothing when there is no text. */
function docComment(text: string | undefined, indent: string): string[] {
  if (text === undefined || text.trim() === '') return [];
  const clean = text.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim();
  const width = 100 - indent.length - 3;
  if (clean.length <= width - 4) return [`${indent}/** ${clean} */`];
  const lines: string[] = [];
  let line = '';
  for (const word of clean.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`), `${indent} */`];
}
