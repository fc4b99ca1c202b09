/**
 * Writes the TypeScript types of the contracts from the .avsc files: one file per named type in
 * libs/contracts/src/generated/, and the barrel libs/contracts/src/generated-types.ts.
 *
 *   npm run schemas:gen            regenerate (and remove generated files no type needs any more)
 *   npm run schemas:gen -- --check exit 1 if the committed files are stale (what the unit test checks)
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { GENERATED_TYPES_DIR, GENERATED_TYPES_FILE, renderGeneratedTypes } from './type-generator';

const files = await renderGeneratedTypes();
const root = join(GENERATED_TYPES_FILE, '..');
const read = (path: string): string | undefined => {
  try {
    return readFileSync(join(root, path), 'utf8');
  } catch {
    return undefined;
  }
};
const stale = [...files].filter(([path, source]) => read(path) !== source).map(([path]) => path);
const extra = existsSync(GENERATED_TYPES_DIR)
  ? readdirSync(GENERATED_TYPES_DIR)
      .map((f) => `generated/${f}`)
      .filter((path) => !files.has(path))
  : [];
const where = (path: string) => relative(process.cwd(), join(root, path));

if (process.argv.includes('--check')) {
  if (stale.length + extra.length > 0) {
    for (const path of stale) console.error(`${where(path)} is stale`);
    for (const path of extra) console.error(`${where(path)} is not generated any more`);
    console.error('run npm run schemas:gen');
    process.exit(1);
  }
  console.log(`${files.size} generated files up to date`);
} else {
  mkdirSync(GENERATED_TYPES_DIR, { recursive: true });
  for (const path of stale) {
    writeFileSync(join(root, path), files.get(path)!);
    console.log(`wrote ${where(path)}`);
  }
  for (const path of extra) {
    rmSync(join(root, path));
    console.log(`removed ${where(path)}`);
  }
  if (stale.length + extra.length === 0) console.log(`${files.size} generated files unchanged`);
}
