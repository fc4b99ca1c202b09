import type { StartHub } from '../start-log.js';
import type { SystemFactory } from '../systems/system.js';
import { dueUniform, inSession } from './workload.js';

/** What a system's warm-up runs through it before its first measured workload (unmeasured). */
export interface WarmUp {
  jobs: number;
  spanMs: number;
  leadMs: number;
  capMs: number;
}

/**
 * Runs `jobs` jobs due over `spanMs` through a throwaway session of the system, and waits (at most
 * `capMs`) until they have started. Nothing of it is measured. Its purpose: a JVM service (our
 * Connect and broker) runs its first thousands of records interpreted, and a workload that happens
 * to come first after the stack started (a `--only burst` run) would measure that instead of the
 * system; every system gets the same warm-up, so none is favoured. Returns a line for the log.
 */
export async function warmUp(f: SystemFactory, hub: StartHub, w: WarmUp): Promise<string> {
  if (w.jobs <= 0) return 'warm-up: none';
  const t0 = Date.now();
  const started = await inSession(f, async (s) => {
    const log = hub.open(dueUniform(w.jobs, Date.now() + w.leadMs, w.spanMs, 7));
    try {
      await s.createBatched(log, 0, w.jobs);
      await log.waitAll(Date.now() + w.capMs);
      return log.started;
    } finally {
      hub.close(log);
    }
  });
  const took = ((Date.now() - t0) / 1000).toFixed(1);
  return `warm-up: ${started} of ${w.jobs} jobs started in ${took} s (unmeasured)`;
}
