import { describe, expect, it } from 'vitest';
import type { AvroRecordSchema } from './avro-schema';
import type { ContractSchema } from './contract-schemas';
import { planRelease, releasedFileText } from './release-plan';
import type { ReleasedSchema } from './schema-files';

const v1: AvroRecordSchema = {
  type: 'record',
  name: 'A',
  namespace: 'x',
  fields: [{ name: 'a', type: 'int' }],
};
const v2: AvroRecordSchema = { ...v1, fields: [...v1.fields, { name: 'b', type: 'int', default: 0 }] };
const contract = (schema: AvroRecordSchema): ContractSchema => ({
  key: 'command',
  name: 'A',
  fullName: 'x.A',
  subject: 's',
  schema,
});
const released =
  (...schemas: AvroRecordSchema[]) =>
  (): ReleasedSchema[] =>
    schemas.map((schema, i) => ({ version: i + 1, schema, file: `v${i + 1}.avsc` }));

describe('planRelease', () => {
  it('releases a never-released contract as v1', () => {
    expect(planRelease([contract(v1)], released())).toEqual([{ name: 'A', version: 1, schema: v1 }]);
  });

  it('leaves out a contract identical to its latest release', () => {
    expect(planRelease([contract(v2)], released(v1, v2))).toEqual([]);
  });

  it('releases a changed contract as the next version', () => {
    expect(planRelease([contract(v2)], released(v1))).toEqual([{ name: 'A', version: 2, schema: v2 }]);
  });

  it('writes pretty JSON ending with a newline', () => {
    expect(JSON.parse(releasedFileText(v1))).toEqual(v1);
    expect(releasedFileText(v1).endsWith('}\n')).toBe(true);
  });
});
