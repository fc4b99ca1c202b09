/**
 * Writes libs/contracts/src/generated-types.ts from the .avsc files.
 *
 *   npm run schemas:gen            regenerate
 *   npm run schemas:gen -- --check exit 1 if the committed file is stale (what the unit test checks)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { GENERATED_TYPES_FILE, renderGeneratedTypes } from './type-generator';

const source = await renderGeneratedTypes();
const where = relative(process.cwd(), GENERATED_TYPES_FILE);
let current: string | undefined;
try {
  current = readFileSync(GENERATED_TYPES_FILE, 'utf8');
} catch {
  current = undefined;
}

if (process.argv.includes('--check')) {
  if (current !== source) {
    console.error(`${where} is stale: run npm run schemas:gen`);
    process.exit(1);
  }
  console.log(`${where} is up to date`);
} else if (current === source) {
  console.log(`${where} unchanged`);
} else {
  writeFileSync(GENERATED_TYPES_FILE, source);
  console.log(`wrote ${where}`);
}
