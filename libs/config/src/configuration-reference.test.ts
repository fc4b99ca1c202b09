import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// docs/configuration.md is the reference of every environment variable the platform's processes
// read: this fails when code reads a variable the reference does not name (in backquotes).

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'node_modules' && name !== 'dist') sources(p, out);
    } else if (p.endsWith('.ts') && !p.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

/** Variables read as `env.X`, `env?.X`, `env['X']`, or declared in an EnvSpec (`env: 'X'`). */
export function variablesRead(text: string): Set<string> {
  const found = new Set<string>();
  const patterns = [
    /\benv\??\.([A-Z][A-Z0-9_]+)\b/g,
    /\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g,
    /\benv:\s*'([A-Z][A-Z0-9_]+)'/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) found.add(m[1]!);
  return found;
}

describe('the configuration reference', () => {
  it('finds the forms a variable is read in', () => {
    expect([...variablesRead("env.A_B; env?.CC; env['D_E']; x: { env: 'F_G', kind: 'int' }")]).toEqual([
      'A_B',
      'CC',
      'D_E',
      'F_G',
    ]);
  });

  it('names every variable the apps and libraries read', () => {
    const read = new Map<string, string>();
    for (const top of ['apps', 'libs'])
      for (const pkg of readdirSync(join(ROOT, top))) {
        const src = join(ROOT, top, pkg, 'src');
        try {
          statSync(src);
        } catch {
          continue;
        }
        for (const file of sources(src))
          for (const v of variablesRead(readFileSync(file, 'utf8'))) read.set(v, file.slice(ROOT.length));
      }
    const reference = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    const missing = [...read].filter(([v]) => !reference.includes(`\`${v}\``)).map(([v, f]) => `${v} (${f})`);
    expect(read.size).toBeGreaterThan(40);
    expect(missing).toEqual([]);
  });
});
