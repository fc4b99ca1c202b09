import { SYSTEMS, type SystemName } from './systems/system.js';
import { WORKLOADS, type WorkloadName } from './workloads/workload.js';

export interface E2eOptions {
  quick: boolean;
  systems: SystemName[];
  workloads: WorkloadName[];
  /** Overrides the plan's repetitions (delayed, burst, ingest and pending probes). */
  reps: number | null;
  /** Drain at this one rate (no ramp): for comparing two builds at the same load. */
  drainRate: number | null;
}

export const USAGE = `npm run bench -- e2e [--json FILE] [--quick] [--only ${WORKLOADS.join(',')}] [--system ${SYSTEMS.join(',')}] [--reps N] [--drain-rate JOBS_PER_SEC]`;

/** Parses the suite's arguments; throws with the usage line on anything it does not know. */
export function parseE2eArgs(argv: readonly string[]): E2eOptions {
  const o: E2eOptions = {
    quick: false,
    systems: [...SYSTEMS],
    workloads: [...WORKLOADS],
    reps: null,
    drainRate: null,
  };
  const bad = (why: string): never => {
    throw Object.assign(new Error(`${why}\nusage: ${USAGE}`), {
      code: 'SCHED_E_BENCH_ARGS',
      retriable: false,
    });
  };
  const list = <T extends string>(v: string | undefined, known: readonly T[], what: string): T[] => {
    if (!v) bad(`${what} needs a value`);
    const items = v!.split(',').map((x) => x.trim());
    for (const x of items)
      if (!known.includes(x as T)) bad(`unknown ${what} "${x}" (known: ${known.join(', ')})`);
    return items as T[];
  };
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k]!;
    if (a === '--quick') o.quick = true;
    else if (a === '--only') o.workloads = list(argv[++k], WORKLOADS, 'workload');
    else if (a === '--system') o.systems = list(argv[++k], SYSTEMS, 'system');
    else if (a === '--reps') {
      const n = Number(argv[++k]);
      if (!Number.isInteger(n) || n < 1 || n > 10) bad('--reps takes an integer from 1 to 10');
      o.reps = n;
    } else if (a === '--drain-rate') {
      const n = Number(argv[++k]);
      if (!Number.isInteger(n) || n < 1 || n > 100_000) bad('--drain-rate takes an integer from 1 to 100000');
      o.drainRate = n;
    } else bad(`unknown argument "${a}"`);
  }
  // Keep the canonical order whatever order they were given in.
  o.workloads = WORKLOADS.filter((w) => o.workloads.includes(w));
  o.systems = SYSTEMS.filter((s) => o.systems.includes(s));
  return Object.freeze(o);
}
