import type { AvroRecordSchema } from './avro-schema';
import type { ContractSchema } from './contract-schemas';
import type { ReleasedSchema } from './schema-files';

export interface PlannedRelease {
  readonly name: string;
  /** The version the snapshot will get: latest released + 1, or 1 for a first release. */
  readonly version: number;
  readonly schema: AvroRecordSchema;
}

/**
 * Which contracts have changed since their latest release, and the version each would be released
 * as. A contract whose composed schema is identical (same JSON, key order included) to its latest
 * release is left out. Pure: the caller reads the released versions and writes the files.
 */
export function planRelease(
  contracts: readonly ContractSchema[],
  released: (name: string) => readonly ReleasedSchema[],
): PlannedRelease[] {
  const plan: PlannedRelease[] = [];
  for (const contract of contracts) {
    const versions = released(contract.name);
    const latest = versions.at(-1);
    if (latest !== undefined && JSON.stringify(latest.schema) === JSON.stringify(contract.schema)) continue;
    plan.push({ name: contract.name, version: (latest?.version ?? 0) + 1, schema: contract.schema });
  }
  return plan;
}

/** File contents of a released snapshot: pretty JSON with a final newline. */
export function releasedFileText(schema: AvroRecordSchema): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}
