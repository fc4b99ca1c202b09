import { CONTRACT_SCHEMAS, releasedVersions } from '@sched/schemas';
import { describe, expect, it } from 'vitest';
import { checkBackwardCompatibility } from './compatibility';

/**
 * The BACKWARD check of `npm test`: a consumer on the current schema must read everything ever
 * released, and each release must have been able to read every earlier one. Checking against all
 * releases (not only the latest, as the registry's BACKWARD level does) is deliberate: records of
 * any released version may still sit in a topic within its retention.
 */
describe.each(CONTRACT_SCHEMAS.map((c) => [c.name, c] as const))('%s', (_name, contract) => {
  const released = releasedVersions(contract.name);

  it('has at least one released version', () => {
    expect(released.length).toBeGreaterThan(0);
  });

  it.each(released.map((r) => [r.version, r] as const))('current reads released v%i', (_v, release) => {
    expect(checkBackwardCompatibility(contract.schema, release.schema)).toEqual({ compatible: true });
  });

  it('each released version reads every earlier one', () => {
    for (const [i, reader] of released.entries()) {
      for (const writer of released.slice(0, i)) {
        expect(
          checkBackwardCompatibility(reader.schema, writer.schema),
          `v${reader.version} reads v${writer.version}`,
        ).toEqual({
          compatible: true,
        });
      }
    }
  });
});

describe('checkBackwardCompatibility catches what the registry would refuse', () => {
  type Field = { name: string; type: unknown; default?: unknown };
  const base = (fields: Field[]) => ({ type: 'record', name: 'R', namespace: 'x', fields });
  const status = { type: 'enum', name: 'S', symbols: ['A', 'B'] };
  const one = { type: 'record', name: 'One', fields: [{ name: 'a', type: 'int' }] };
  const two = { type: 'record', name: 'Two', fields: [{ name: 'b', type: 'int' }] };
  const v1 = base([
    { name: 'id', type: 'string' },
    { name: 'n', type: 'int' },
    { name: 's', type: status },
    { name: 'body', type: [one, two] },
    { name: 'opt', type: ['null', 'string'], default: null },
  ]);
  const change = (name: string, field: Field | null) =>
    base([...v1.fields.filter((f) => f.name !== name), ...(field === null ? [] : [field])]);

  it.each([
    ['add a field with a default', change('extra', { name: 'extra', type: 'long', default: 0 })],
    ['remove a field', change('opt', null)],
    ['widen int to long', change('n', { name: 'n', type: 'long' })],
    ['add an enum symbol', change('s', { name: 's', type: { ...status, symbols: ['A', 'B', 'C'] } })],
    [
      'add a union branch',
      change('body', { name: 'body', type: [one, two, { type: 'record', name: 'Three', fields: [] }] }),
    ],
  ])('allows: %s', (_what, reader) => {
    expect(checkBackwardCompatibility(reader, v1).compatible).toBe(true);
  });

  it.each([
    ['add a field without a default', change('extra', { name: 'extra', type: 'long' })],
    ['change int to string', change('n', { name: 'n', type: 'string' })],
    ['remove an enum symbol', change('s', { name: 's', type: { ...status, symbols: ['A'] } })],
    ['remove a union branch', change('body', { name: 'body', type: [one] })],
    ['make a nullable field required', change('opt', { name: 'opt', type: 'string' })],
    ['rename the record', { ...v1, name: 'Renamed' }],
  ])('refuses: %s', (_what, reader) => {
    const result = checkBackwardCompatibility(reader, v1);
    expect(result.compatible).toBe(false);
  });

  it('allows removing an enum symbol when the enum has a default', () => {
    const reader = change('s', { name: 's', type: { ...status, symbols: ['A'], default: 'A' } });
    expect(checkBackwardCompatibility(reader, v1).compatible).toBe(true);
  });
});
