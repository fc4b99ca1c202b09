import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { helpFor } from './help.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const sched = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, SCHED_API_KEY: '' },
  });

describe('the CLI help', () => {
  it('answers --help, help and <command> --help, and nothing else', () => {
    expect(helpFor('--help', [])).toContain('Exit codes');
    expect(helpFor('help', ['job'])).toContain('sched job create');
    expect(helpFor('tenant', ['key', '--help'])).toContain('sched tenant key');
    expect(helpFor('job', ['show', 'x'])).toBeUndefined();
  });

  it('prints it from the real CLI, exit 0; no command is bad usage, exit 2', () => {
    const all = sched('--help');
    expect(all.status).toBe(0);
    expect(all.stdout).toContain('tenant    create');
    const one = sched('queue', '--help');
    expect(one.status).toBe(0);
    expect(one.stdout).toContain('sched queue pause');
    const none = sched();
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('sched: the scheduler');
    const bad = sched('frobnicate');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('sched --help');
  });

  it('refuses an API command without a key, sending nothing (exit 2)', () => {
    const res = sched('job', 'show', 'x');
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('SCHED_API_KEY is required');
  });
});
