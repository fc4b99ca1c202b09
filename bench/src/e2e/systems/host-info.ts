import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { REPO_ROOT } from '../child-process.js';

/* What the report says about the processes and the code it measured. */

export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

export function gitRevision(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short=10', 'HEAD'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    return dirty ? `${sha} + working tree` : sha;
  } catch {
    return 'unknown';
  }
}

export function packageVersion(name: string): string {
  try {
    const path = `${REPO_ROOT}node_modules/${name}/package.json`;
    return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
