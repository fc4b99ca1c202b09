import type { Type } from 'avsc';
import {
  COMMAND_CONTRACT,
  COMMAND_REJECTED_CONTRACT,
  type ContractSchema,
  DISPATCH_CONTRACT,
  JOB_EVENT_CONTRACT,
} from '@sched/schemas';
import { describe, expect, it } from 'vitest';
import type { AvscRecordInternals } from './avsc-internals';
import { createAvroType } from './avro-types';
import {
  FULL_COMMANDS,
  FULL_DISPATCH,
  FULL_EVENT,
  FULL_REJECTED,
  MINIMAL_COMMANDS,
  MINIMAL_DISPATCH,
  MINIMAL_EVENT,
  MINIMAL_REJECTED,
} from './contract-samples';
import * as generated from './generated-types';

function invalidPaths(type: Type, value: unknown): string[] {
  const paths: string[] = [];
  type.isValid(value, { errorHook: (path) => paths.push(path.join('.')) });
  return paths;
}

/** Field names of every record reachable from `type`, by record name. */
function recordFields(type: Type, out = new Map<string, string[]>()): Map<string, string[]> {
  const name = type.typeName;
  if (name === 'record' && type.name !== undefined) {
    if (out.has(type.name)) return out;
    const record = type as AvscRecordInternals;
    out.set(
      type.name,
      record.fields.map((f) => f.name),
    );
    for (const field of record.fields) recordFields(field.type, out);
  } else if (name.startsWith('logical:')) {
    recordFields((type as unknown as { underlyingType: Type }).underlyingType, out);
  } else if (name.startsWith('union:')) {
    for (const branch of (type as unknown as { types: Type[] }).types) recordFields(branch, out);
  } else if (name === 'array') {
    recordFields((type as unknown as { itemsType: Type }).itemsType, out);
  } else if (name === 'map') {
    recordFields((type as unknown as { valuesType: Type }).valuesType, out);
  }
  return out;
}

const cases: { contract: ContractSchema; full: readonly unknown[]; minimal: readonly unknown[] }[] = [
  { contract: COMMAND_CONTRACT, full: FULL_COMMANDS, minimal: MINIMAL_COMMANDS },
  { contract: DISPATCH_CONTRACT, full: [FULL_DISPATCH], minimal: [MINIMAL_DISPATCH] },
  { contract: JOB_EVENT_CONTRACT, full: [FULL_EVENT], minimal: [MINIMAL_EVENT] },
  { contract: COMMAND_REJECTED_CONTRACT, full: [FULL_REJECTED], minimal: [MINIMAL_REJECTED] },
];

describe.each(cases)(
  'generated types of $contract.name agree with the schema',
  ({ contract, full, minimal }) => {
    const type = createAvroType(contract.schema);

    it('accepts every fully populated sample (typed with the generated output types)', () => {
      for (const value of full) expect(invalidPaths(type, value)).toEqual([]);
    });

    it('round-trips every fully populated sample unchanged', () => {
      for (const value of full) expect(type.fromBuffer(type.toBuffer(value))).toEqual(value);
    });

    it('accepts every minimal Input sample and fills in the schema defaults', () => {
      for (const value of minimal) {
        expect(invalidPaths(type, value)).toEqual([]);
        const decoded = type.fromBuffer(type.toBuffer(value)) as unknown;
        expect(invalidPaths(type, decoded)).toEqual([]);
        expect(decoded).toMatchObject(value as object);
      }
    });

    it('has samples that set exactly the fields of each record (no field the types miss)', () => {
      const fields = recordFields(type);
      const seen = new Map<string, Set<string>>();
      // Decode the full samples and record which fields each record instance carries.
      const visit = (value: unknown, t: Type): void => {
        const name = t.typeName;
        if (name === 'record' && t.name !== undefined && value !== null && typeof value === 'object') {
          const set = seen.get(t.name) ?? new Set<string>();
          for (const key of Object.keys(value)) set.add(key);
          seen.set(t.name, set);
          for (const field of (t as AvscRecordInternals).fields)
            visit((value as Record<string, unknown>)[field.name], field.type);
        } else if (name.startsWith('logical:') && value !== null && typeof value === 'object') {
          const tagged = value as { kind: string; value: unknown };
          const branch = (t as unknown as { underlyingType: { types: Type[] } }).underlyingType.types.find(
            (b) => b.name?.endsWith(`.${tagged.kind}`),
          );
          if (branch !== undefined) visit(tagged.value, branch);
        } else if (name.startsWith('union:') && value !== null) {
          for (const branch of (t as unknown as { types: Type[] }).types)
            if (branch.isValid(value)) visit(value, branch);
        } else if (name === 'array' && Array.isArray(value)) {
          for (const item of value) visit(item, (t as unknown as { itemsType: Type }).itemsType);
        }
      };
      for (const value of full) visit(value, type);
      for (const [record, names] of fields) {
        expect([...(seen.get(record) ?? [])].sort(), `fields of ${record} seen in the samples`).toEqual(
          [...names].sort(),
        );
      }
    });

    it('rejects a value with a field missing, so the check above is not vacuous', () => {
      const [first] = full as Record<string, unknown>[];
      const firstField = contract.schema.fields[0]?.name ?? '';
      const broken = { ...first, [firstField]: undefined };
      expect(invalidPaths(type, broken)).toEqual([firstField]);
    });
  },
);

describe('generated enum and kind lists', () => {
  const command = createAvroType(COMMAND_CONTRACT.schema);
  const symbolsOf = (name: string): readonly string[] => {
    let found: readonly string[] = [];
    const walk = (t: Type): void => {
      if (t.typeName === 'enum' && t.name === name) found = (t as unknown as { symbols: string[] }).symbols;
      else if (t.typeName === 'record') for (const f of (t as AvscRecordInternals).fields) walk(f.type);
      else if (t.typeName.startsWith('logical:'))
        walk((t as unknown as { underlyingType: Type }).underlyingType);
      else if (t.typeName.startsWith('union:'))
        for (const b of (t as unknown as { types: Type[] }).types) walk(b);
      else if (t.typeName === 'array') walk((t as unknown as { itemsType: Type }).itemsType);
    };
    walk(command);
    walk(createAvroType(JOB_EVENT_CONTRACT.schema));
    return found;
  };

  it('lists the same symbols as the schemas', () => {
    expect(generated.FAILURE_CLASS_SYMBOLS).toEqual(symbolsOf('io.sched.v1.FailureClass'));
    expect(generated.ATTEMPT_OUTCOME_SYMBOLS).toEqual(symbolsOf('io.sched.v1.AttemptOutcome'));
    expect(generated.MISFIRE_POLICY_SYMBOLS).toEqual(symbolsOf('io.sched.v1.MisfirePolicy'));
    expect(generated.OVERLAP_POLICY_SYMBOLS).toEqual(symbolsOf('io.sched.v1.OverlapPolicy'));
    expect(generated.DST_SKIPPED_POLICY_SYMBOLS).toEqual(symbolsOf('io.sched.v1.DstSkippedPolicy'));
    expect(generated.DST_REPEATED_POLICY_SYMBOLS).toEqual(symbolsOf('io.sched.v1.DstRepeatedPolicy'));
    expect(generated.JOB_EVENT_TYPE_SYMBOLS).toEqual(symbolsOf('io.sched.v1.JobEventType'));
  });

  it('lists every command kind', () => {
    expect(FULL_COMMANDS.map((c) => c.body.kind)).toEqual(generated.COMMAND_BODY_KINDS);
    expect(MINIMAL_COMMANDS.map((c) => c.body.kind)).toEqual(generated.COMMAND_BODY_KINDS);
  });

  it('describes random values avsc generates (tagged bodies, numbers, buffers)', () => {
    for (let i = 0; i < 200; i++) {
      const value = command.random() as unknown as generated.Command;
      expect(generated.COMMAND_BODY_KINDS).toContain(value.body.kind);
      expect(typeof value.issuedAtMs).toBe('number');
      expect(command.isValid(value)).toBe(true);
    }
  });
});
