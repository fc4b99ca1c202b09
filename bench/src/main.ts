import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { format, resolveConfig } from 'prettier';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchSuite } from './bench-suite';
import { machineInfo } from './machine';

/*
 * Benchmark dispatcher: `npm run bench -- <suite> [--json FILE] [suite options]`.
 * A suite is a program that prints figures (and JSON with --json), not a timed test. To add one,
 * register it below with the node flags it needs; when they are missing, this file re-runs itself in a
 * child `node <flags> --import tsx` process.
 */
interface SuiteEntry {
  readonly description: string;
  readonly nodeFlags: readonly string[];
  readonly load: () => Promise<BenchSuite>;
}

const SUITES: Readonly<Record<string, SuiteEntry>> = {
  wheel: {
    description:
      'timing wheel vs binary heap: insert, cancel, expire, mixed, bytes/timer (1M and 10M timers)',
    nodeFlags: ['--expose-gc', '--max-old-space-size=16384'],
    load: async () => (await import('./wheel-suite/wheel-suite')).wheelSuite,
  },
  catchup: {
    description: 'catch-up drain of an overdue backlog after an outage (ours): time, rate, Postgres µs/job',
    nodeFlags: [],
    load: async () => (await import('./catch-up-suite/catch-up-suite')).catchUpSuite,
  },
  floors: {
    description:
      'what this machine allows: least cost of an index insert/cancel, one Postgres commit, one Kafka hop',
    nodeFlags: ['--max-old-space-size=16384'],
    load: async () => (await import('./floor-suite/floor-suite')).floorSuite,
  },
  e2e: {
    description: 'ours vs pg-boss and BullMQ end to end: delayed, burst, ingest, drain, pending, recovery',
    nodeFlags: [],
    load: async () => (await import('./e2e/index')).e2eSuite,
  },
};

/** Set in the child process, so that it does not re-spawn again. */
const CHILD_ENV = 'SCHED_BENCH_CHILD';

function usage(): string {
  const lines = Object.entries(SUITES).map(([name, s]) => `  ${name.padEnd(8)} ${s.description}`);
  return ['usage: npm run bench -- <suite> [--json FILE] [suite options]', 'suites:', ...lines].join('\n');
}

async function respawn(flags: readonly string[], argv: readonly string[]): Promise<number> {
  const tsx = import.meta.resolve('tsx');
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, [...flags, '--import', tsx, self, ...argv], {
    stdio: 'inherit',
    env: { ...process.env, [CHILD_ENV]: '1' },
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  const entry = name === undefined ? undefined : SUITES[name];
  if (name === undefined || name === '--help' || entry === undefined) {
    console.error(name === undefined || name === '--help' ? usage() : `unknown suite "${name}"\n${usage()}`);
    return name === '--help' ? 0 : 2;
  }
  if (entry.nodeFlags.length > 0 && process.env[CHILD_ENV] !== '1') return respawn(entry.nodeFlags, argv);

  const jsonAt = rest.indexOf('--json');
  const jsonFile = jsonAt >= 0 ? rest[jsonAt + 1] : undefined;
  if (jsonAt >= 0 && jsonFile === undefined) {
    console.error('--json needs a file name');
    return 2;
  }
  const suiteArgs = jsonAt >= 0 ? [...rest.slice(0, jsonAt), ...rest.slice(jsonAt + 2)] : rest;
  const machine = machineInfo();
  const suite = await entry.load();
  const outcome = await suite.run(suiteArgs);
  if (jsonFile !== undefined) {
    const report = { suite: suite.name, machine, ...outcome, date: new Date().toISOString() };
    await mkdir(dirname(jsonFile), { recursive: true });
    // Laid out as the repository's format check wants, so a result can be committed as written.
    const options = (await resolveConfig(jsonFile)) ?? {};
    const text = await format(JSON.stringify(report), { ...options, parser: 'json' });
    await writeFile(jsonFile, text);
    console.log(`wrote ${jsonFile}`);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
