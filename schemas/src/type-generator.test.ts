import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AvroRecordSchema } from './avro-schema';
import type { ContractSchema } from './contract-schemas';
import {
  GENERATED_TYPES_DIR,
  GENERATED_TYPES_FILE,
  generateTypeFiles,
  generateTypes,
  renderGeneratedTypes,
} from './type-generator';

const contract = (schema: AvroRecordSchema): ContractSchema => ({
  key: 'command',
  name: schema.name,
  fullName: `x.${schema.name}`,
  subject: 'topic-value',
  schema,
});

const sample: AvroRecordSchema = {
  type: 'record',
  name: 'Envelope',
  namespace: 'x',
  doc: 'An envelope.',
  fields: [
    { name: 'id', type: 'string', doc: 'Identifier.' },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'blob', type: 'bytes' },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'tags', type: { type: 'map', values: 'int' }, default: {} },
    {
      name: 'level',
      type: { type: 'enum', name: 'Level', symbols: ['LOW', 'HIGH'] },
      default: 'LOW',
    },
    {
      name: 'payload',
      type: [
        { type: 'record', name: 'Apple', fields: [{ name: 'n', type: 'int', default: 1 }] },
        { type: 'record', name: 'Pear', fields: [{ name: 'ripe', type: 'boolean' }] },
      ],
    },
    { name: 'fruits', type: { type: 'array', items: 'x.Pear' } },
  ],
};

describe('generateTypes', () => {
  const source = generateTypes([contract(sample)]);

  it('maps Avro types to TypeScript as documented', () => {
    expect(source).toContain('export interface Envelope {');
    expect(source).toContain('  id: string;');
    expect(source).toContain('  at: number;');
    expect(source).toContain('  blob: Buffer;');
    expect(source).toContain('  note: string | null;');
    expect(source).toContain('  tags: Record<string, number>;');
    expect(source).toContain('  level: Level;');
    expect(source).toContain('  fruits: Pear[];');
    expect(source).toContain("export type Level = 'LOW' | 'HIGH';");
    expect(source).toContain("export const LEVEL_SYMBOLS: readonly Level[] = ['LOW', 'HIGH'];");
  });

  it('tags a union of records with kind and value, named after its field', () => {
    expect(source).toContain('  payload: EnvelopePayload;');
    expect(source).toContain(
      "export type EnvelopePayload = { kind: 'Apple'; value: Apple } | { kind: 'Pear'; value: Pear };",
    );
    expect(source).toContain(
      "export type EnvelopePayloadInput = { kind: 'Apple'; value: AppleInput } | { kind: 'Pear'; value: PearInput };",
    );
    expect(source).toContain(
      "export const ENVELOPE_PAYLOAD_KINDS: readonly EnvelopePayloadKind[] = ['Apple', 'Pear'];",
    );
  });

  it('makes defaulted fields optional in the Input type only', () => {
    expect(source).toContain('export interface EnvelopeInput {');
    expect(source).toContain('  note?: string | null;');
    expect(source).toContain('  level?: Level;');
    expect(source).toContain('  payload: EnvelopePayloadInput;');
    expect(source).toContain('  fruits: PearInput[];');
    expect(source).toMatch(/export interface AppleInput \{\n {2}n\?: number;/);
  });

  it('carries docs into JSDoc', () => {
    expect(source).toContain('/** An envelope. */\nexport interface Envelope {');
    expect(source).toContain('  /** Identifier. */\n  id: string;');
  });

  it('maps each subject to its value type', () => {
    expect(source).toContain("  'topic-value': Envelope;");
  });

  it('refuses a union it cannot type the way avsc reads it', () => {
    const odd: AvroRecordSchema = { ...sample, fields: [{ name: 'x', type: ['string', 'int'] }] };
    expect(() => generateTypes([contract(odd)])).toThrow(/unsupported union in Envelope\.x/);
  });

  it('refuses two types with the same short name', () => {
    const clash: AvroRecordSchema = {
      type: 'record',
      name: 'Clash',
      namespace: 'x',
      fields: [
        { name: 'a', type: { type: 'enum', name: 'Level', namespace: 'y', symbols: ['A'] } },
        { name: 'b', type: { type: 'enum', name: 'Level', namespace: 'z', symbols: ['B'] } },
      ],
    };
    expect(() => generateTypes([contract(clash)])).toThrow(/share the name Level/);
  });
});

describe('libs/contracts/src/generated-types.ts and generated/', () => {
  it('are what npm run schemas:gen produces from the current .avsc files, and nothing else', async () => {
    // On failure: run `npm run schemas:gen` and commit the result.
    const files = await renderGeneratedTypes();
    for (const [path, source] of files)
      expect({ path, source: readFileSync(join(GENERATED_TYPES_FILE, '..', path), 'utf8') }).toEqual({
        path,
        source,
      });
    const committed = readdirSync(GENERATED_TYPES_DIR).map((f) => `generated/${f}`);
    expect(committed.sort()).toEqual([...files.keys()].filter((p) => p.startsWith('generated/')).sort());
  });

  it('puts each named type in a file of its own, importing what it names from the others', () => {
    const files = generateTypeFiles([contract(sample)]);
    expect([...files.keys()].sort()).toEqual([
      'generated-types.ts',
      'generated/Apple.ts',
      'generated/Envelope.ts',
      'generated/Level.ts',
      'generated/Pear.ts',
    ]);
    const envelope = files.get('generated/Envelope.ts')!;
    expect(envelope).toContain("import type { Apple, AppleInput } from './Apple';");
    expect(envelope).toContain("import type { Level } from './Level';");
    expect(envelope).toContain("import type { Pear, PearInput } from './Pear';");
    expect(envelope).toContain('export type EnvelopePayload =');
    expect(files.get('generated/Level.ts')).not.toContain('import');
    const barrel = files.get('generated-types.ts')!;
    expect(barrel).toContain("export * from './generated/Envelope';");
    expect(barrel).toContain("import type { Envelope } from './generated/Envelope';");
    expect(barrel).toContain("'topic-value': Envelope;");
  });
});
