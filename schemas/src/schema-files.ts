import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type AvroNamedSchema,
  type AvroRecordSchema,
  type AvroSchema,
  isNamedSchema,
  qualify,
  shortName,
} from './avro-schema';

/** `schemas/` on disk. The package has no build step, so its data files sit next to its sources. */
export const SCHEMAS_DIR = fileURLToPath(new URL('..', import.meta.url));
/** One `.avsc` file per named type, named after the type's short name. */
export const AVRO_DIR = join(SCHEMAS_DIR, 'avro');
/** `released/<Name>/v<N>.avsc`: the self-contained schema of a subject as of release N. */
export const RELEASED_DIR = join(SCHEMAS_DIR, 'released');

/**
 * Reads every `*.avsc` in `dir` into a map keyed by full name. Synchronous: it runs once when the
 * package is imported. Throws with the file name on bad JSON, a non-named top-level type, or a file
 * name that differs from the type's short name.
 */
export function readSchemaDirectory(dir: string): Map<string, AvroNamedSchema> {
  const library = new Map<string, AvroNamedSchema>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.avsc'))
    .sort()) {
    const schema = readJson(join(dir, file));
    if (!isNamedSchema(schema)) {
      throw new Error(`${file}: top-level type must be a named record, enum or fixed`);
    }
    if (`${schema.name}.avsc` !== file) {
      throw new Error(`${file}: file must be named after its type (${schema.name}.avsc)`);
    }
    const fullName = qualify(schema.name, schema.namespace);
    if (library.has(fullName)) throw new Error(`${file}: ${fullName} is defined twice`);
    library.set(fullName, schema);
  }
  return library;
}

export interface ReleasedSchema {
  /** 1-based release number, from the file name `v<N>.avsc`. */
  readonly version: number;
  readonly schema: AvroRecordSchema;
  readonly file: string;
}

/** Every released version of a subject's record (short name), oldest first; empty if none. */
export function readReleasedVersions(name: string, dir: string = RELEASED_DIR): ReleasedSchema[] {
  const folder = join(dir, name);
  if (!existsSync(folder)) return [];
  const releases: ReleasedSchema[] = [];
  for (const file of readdirSync(folder)) {
    const match = /^v([1-9][0-9]*)\.avsc$/.exec(file);
    if (match?.[1] === undefined) continue;
    const schema = readJson(join(folder, file));
    if (!isNamedSchema(schema) || schema.type !== 'record' || shortName(schema.name) !== name) {
      throw new Error(`released/${name}/${file}: expected the record ${name}`);
    }
    releases.push({ version: Number(match[1]), schema, file: join(folder, file) });
  }
  return releases.sort((a, b) => a.version - b.version);
}

function readJson(path: string): AvroSchema {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as AvroSchema;
  } catch (error) {
    throw new Error(`${path}: ${(error as Error).message}`, { cause: error });
  }
}
