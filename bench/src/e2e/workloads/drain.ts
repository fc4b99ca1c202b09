import type { CpuWindow } from '../process-cpu.js';
import type { StartLog } from '../start-log.js';
import type { SystemFactory, SystemSession } from '../systems/system.js';
import {
  round,
  sleep,
  withCpu,
  type RepFigures,
  type WorkloadContext,
  outOfBudget,
  type WorkloadRun,
  inSession,
  dbWork,
} from './workload.js';

const TICK_MS = 20;

interface Offered {
  log: StartLog;
  issued: number;
  /** Backlog (issued − started) sampled once a second. */
  backlog: number[];
  /** The generator could not offer the rate within its time (the create calls were too slow). */
  producerLimited: boolean;
}

/**
 * Open-loop generator: every 20 ms it creates (in one batched call) the jobs its schedule says are
 * due by now, each due at the moment it is created. Lag is start − due, so it includes the whole
 * command → handler-start path. Bounded: `rate × durationMs` jobs and `durationMs` (+ one call).
 */
async function offer(
  s: SystemSession,
  ctx: WorkloadContext,
  rate: number,
  durationMs: number,
): Promise<Offered> {
  const n = Math.ceil((rate * durationMs) / 1000);
  const log = ctx.hub.open(new Float64Array(n));
  const t0 = Date.now();
  let issued = 0;
  const backlog: number[] = [];
  let nextSample = t0 + 1000;
  while (issued < n) {
    const now = Date.now();
    if (now - t0 > durationMs + 2_000) break;
    const target = Math.min(n, Math.floor(((now - t0) * rate) / 1000));
    if (target > issued) {
      const from = issued;
      for (let i = from; i < target; i++) log.due[i] = now;
      await s.createBatched(log, from, target);
      issued = target;
    }
    if (Date.now() >= nextSample) {
      backlog.push(issued - log.started);
      nextSample += 1000;
    }
    await sleep(TICK_MS - ((Date.now() - t0) % TICK_MS));
  }
  // A create call slower than a tick makes the next one bigger; only falling short overall counts.
  return { log, issued, backlog, producerLimited: issued < n * 0.97 };
}

/** How long a failed confirmation's backlog may take to drain before the next one starts. */
const DRAIN_BACKLOG_MS = 45_000;

/** Holds when the offered rate was offered and the backlog stayed under a second's worth and did not grow. */
function held(o: Offered, rate: number): boolean {
  if (o.producerLimited) return false;
  const b = o.backlog;
  const end = o.issued - o.log.started;
  const mid = b[Math.floor(b.length / 2)] ?? 0;
  // Under a second's worth outstanding at the end, and not more than half a second's more than midway.
  return end <= rate + 20 && end - mid <= rate * 0.5 + 20;
}

/**
 * The rate of the confirmation after one that did not hold: what the failed one started per second
 * (a system past its limit starts about what it can hold), but at least 10 % and at most 20 % under
 * what it offered, so a stall does not collapse the figure and a near miss is not retried at once.
 */
export function nextConfirmRate(offered: number, startedPerSec: number): number {
  return Math.round(Math.min(offered * 0.9, Math.max(offered * 0.8, startedPerSec)));
}

/**
 * drain: the highest rate a system holds from command to handler start. A ramp of short steps
 * (×growth from startRate) finds the last rate held, a few steps between it and the first rate
 * that failed narrow it down; then a `confirmMs` run at that rate gives the figure: jobs started per
 * second after the warm-up, and the lag of those jobs. A confirmation that does not hold is followed
 * (at most twice) by one at `nextConfirmRate`.
 */
export async function drain(f: SystemFactory, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  return inSession(f, (s) => drainIn(s, ctx));
}

async function drainIn(s: SystemSession, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  const p = ctx.plan.drain;
  const notes: string[] = [];
  let best = 0;
  let rate = p.startRate;
  const ramp: string[] = [];
  const step = async (r: number, refining: boolean): Promise<boolean> => {
    const o = await offer(s, ctx, r, p.stepMs);
    const ok = held(o, r);
    ramp.push(`${refining ? '~' : ''}${r}${ok ? '✓' : o.producerLimited ? '✗(producer)' : '✗'}`);
    // Let what is left drain before the next step (bounded), unmeasured. After a failed step the
    // refinement follows, which must not pay for this step's backlog. (A producer-limited step
    // never issued all its jobs, so waiting for all of them would only run out the clock.)
    const waitMs = ok || o.producerLimited ? p.leftoverMs : DRAIN_BACKLOG_MS;
    if (!(await o.log.waitAll(Date.now() + waitMs)) && !ok && !o.producerLimited)
      notes.push(`backlog of the ${r} jobs/s step not drained before the next step`);
    ctx.hub.close(o.log);
    return ok;
  };
  let failed: number | undefined;
  if (p.fixedRate !== undefined) {
    // --drain-rate: the confirm alone, at the given rate.
    best = p.fixedRate;
    ramp.push(`none (fixed rate ${p.fixedRate})`);
  }
  for (let k = 0; k < p.maxSteps && rate <= p.maxRate && p.fixedRate === undefined; k++) {
    if (!(await step(rate, false))) {
      failed = rate;
      break;
    }
    best = rate;
    rate = Math.round(rate * p.growth);
  }
  // Between the last rate held and the first that failed, halve the gap (geometrically) a few
  // times: with ×1.6 steps the figure could sit up to 38 % under what a system holds.
  for (let k = 0; k < p.refineSteps && best > 0 && failed !== undefined; k++) {
    const mid = Math.round(Math.sqrt(best * failed));
    if (mid <= best * 1.05 || mid >= failed * 0.95) break;
    if (await step(mid, true)) best = mid;
    else failed = mid;
  }
  notes.push(`ramp (jobs/s offered, held?; ~ between held and failed): ${ramp.join(' ')}`);
  ctx.say(`  ramp: ${ramp.join(' ')}`);
  if (best === 0) {
    notes.push(`did not hold even ${p.startRate} jobs/s`);
    best = Math.round(p.startRate / 2);
  }

  const reps: RepFigures[] = [];
  const cpu: CpuWindow[] = [];
  let evidence: Record<string, unknown> | undefined;
  let confirmRate = best;
  for (let rep = 0; rep < p.confirmReps; rep++) {
    if (outOfBudget(ctx, rep, notes)) break;
    for (let attempt = 0; attempt < 3; attempt++) {
      const work = await dbWork(s);
      const { value: o, cpu: c } = await withCpu(s, () => offer(s, ctx, confirmRate, p.confirmMs));
      const ok = held(o, confirmRate);
      const warm = o.log.due[0]! + p.confirmWarmupMs;
      // As long as a ramp step waits: `lost` is what has not started by then (it was 5 s, which
      // counted a few slow stragglers as lost).
      await o.log.waitAll(Date.now() + p.leftoverMs);
      const perJob = await work(o.log.started);
      const inWindow = (i: number) => o.log.due[i]! >= warm && i < o.issued;
      const started = o.log.sortedStarts();
      const windowEnd = o.log.due[o.issued - 1]!;
      let k = 0;
      for (const t of started) if (t >= warm && t <= windowEnd) k++;
      const measuredRate = (k * 1000) / (windowEnd - warm);
      const lag = o.log.lag(inWindow);
      if (!ok && attempt < 2 && p.fixedRate === undefined) {
        notes.push(
          `confirm at ${confirmRate} jobs/s did not hold (backlog ${o.issued - o.log.started}, ${round(measuredRate)} jobs/s started); next at ${nextConfirmRate(confirmRate, measuredRate)}`,
        );
        // The next confirmation starts from an empty backlog, or it would pay for this one's.
        const drained = await o.log.waitAll(Date.now() + DRAIN_BACKLOG_MS);
        if (!drained)
          notes.push(
            `backlog not drained within ${DRAIN_BACKLOG_MS / 1000} s (${o.issued - o.log.started} left)`,
          );
        ctx.hub.close(o.log);
        confirmRate = nextConfirmRate(confirmRate, measuredRate);
        continue;
      }
      if (!ok) notes.push(`confirm at ${confirmRate} jobs/s did not hold; figure is what it started`);
      reps.push({
        jobsPerSec: round(measuredRate),
        lagMs: { p50: lag.p50, p99: lag.p99, p999: lag.p999, max: lag.max },
        early: o.log.early,
        lost: o.issued - o.log.started,
        duplicates: o.log.duplicates,
        extra: { offeredRate: confirmRate, held: ok ? 1 : 0, windowMs: round(windowEnd - warm), ...perJob },
      });
      cpu.push(c);
      ctx.say(
        `  confirm ${rep + 1}: offered ${confirmRate}/s for ${p.confirmMs / 1000} s → ${round(measuredRate)} jobs/s started, p50 ${lag.p50} p99 ${lag.p99} ms, held ${ok}`,
      );
      if (s.evidence) evidence = await s.evidence(o.log, inWindow);
      ctx.hub.close(o.log);
      break;
    }
  }
  return [{ system: s.system, workload: 'drain', reps, cpu, evidence, notes }];
}
