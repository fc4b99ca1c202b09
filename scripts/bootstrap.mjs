// Installs npm dependencies when node_modules is missing or older than the lockfile,
// so `npm test`, `npm run demo` and `npm run stack` work on a fresh clone.
// Plain Node on purpose: it runs before any dependency exists.
import { existsSync, statSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quiet = process.argv.includes('--quiet');
const lock = join(root, 'package-lock.json');
const marker = join(root, 'node_modules', '.package-lock.json');
const stale = !existsSync(marker) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs);
if (stale) {
  if (!quiet) console.error('[bootstrap] installing npm dependencies (npm ci)…');
  execSync(existsSync(lock) ? 'npm ci --no-audit --no-fund' : 'npm install --no-audit --no-fund', {
    cwd: root,
    stdio: ['ignore', quiet ? 'ignore' : 'inherit', 'inherit'],
  });
} else if (!quiet) {
  console.error('[bootstrap] npm dependencies up to date');
}
