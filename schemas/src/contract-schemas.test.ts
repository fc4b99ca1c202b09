import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CONTRACT_SCHEMAS,
  dispatchTopic,
  releasedVersions,
  SCHEMA_FILES,
  SUBJECTS,
  TOPICS,
} from './contract-schemas';
import { AVRO_DIR } from './schema-files';

/** Full names of every named type defined anywhere in a composed schema. */
function definedNames(schema: unknown, namespace = '', out = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const branch of schema) definedNames(branch, namespace, out);
  else if (typeof schema === 'object' && schema !== null) {
    const node = schema as {
      type?: unknown;
      name?: string;
      namespace?: string;
      fields?: { type: unknown }[];
    };
    let inner = namespace;
    if (typeof node.name === 'string' && ['record', 'enum', 'fixed'].includes(node.type as string)) {
      const full = node.name.includes('.') ? node.name : `${node.namespace ?? namespace}.${node.name}`;
      out.add(full);
      inner = full.slice(0, full.lastIndexOf('.'));
    }
    for (const field of node.fields ?? []) definedNames(field.type, inner, out);
    for (const key of ['items', 'values', 'type'] as const) {
      const child = (node as Record<string, unknown>)[key];
      if (typeof child === 'object') definedNames(child, inner, out);
    }
  }
  return out;
}

describe('contract schemas', () => {
  it('uses TopicNameStrategy for fixed topics and the record name for Dispatch', () => {
    expect(SUBJECTS).toEqual({
      command: 'sched.commands-value',
      dispatch: 'io.sched.v1.Dispatch',
      event: 'sched.events-value',
      rejected: 'sched.commands.rejected-value',
    });
    expect(dispatchTopic('emails')).toBe('sched.dispatch.emails');
    expect(TOPICS.commands).toBe('sched.commands');
  });

  it('composes every contract into a self-contained schema', () => {
    for (const contract of CONTRACT_SCHEMAS) {
      expect(contract.schema.name).toBe(contract.name);
      expect(contract.schema.namespace).toBe('io.sched.v1');
      expect(contract.subject).toBe(SUBJECTS[contract.key]);
      expect(Object.isFrozen(contract.schema)).toBe(true);
    }
  });

  it('puts every command kind in the Command body union, in the order the issue lists them', () => {
    const body = CONTRACT_SCHEMAS[0]?.schema.fields.find((f) => f.name === 'body');
    const names = (body?.type as unknown as { name: string }[]).map((branch) => branch.name);
    expect(names).toEqual([
      'CreateJob',
      'CancelJob',
      'RescheduleJob',
      'UpsertSchedule',
      'PauseSchedule',
      'ResumeSchedule',
      'DeleteSchedule',
      'AttemptResult',
    ]);
  });

  it('has no .avsc file that no contract uses', () => {
    const used = new Set<string>();
    for (const contract of CONTRACT_SCHEMAS) for (const name of definedNames(contract.schema)) used.add(name);
    const files = readdirSync(AVRO_DIR).filter((f) => f.endsWith('.avsc'));
    expect(files.length).toBe(SCHEMA_FILES.size);
    expect([...SCHEMA_FILES.keys()].filter((name) => !used.has(name))).toEqual([]);
  });

  it('has a released v1 for every contract', () => {
    for (const contract of CONTRACT_SCHEMAS) {
      const versions = releasedVersions(contract.name).map((r) => r.version);
      expect(versions[0], contract.name).toBe(1);
      expect(versions, contract.name).toEqual(versions.map((_, i) => i + 1));
    }
  });
});
