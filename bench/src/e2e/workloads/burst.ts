import type { CpuWindow } from '../process-cpu.js';
import { cpuWindow } from '../process-cpu.js';
import type { SystemFactory, SystemSession } from '../systems/system.js';
import type { StartLog } from '../start-log.js';
import {
  dueUniform,
  round,
  sleep,
  sleepUntil,
  type RepFigures,
  type WorkloadContext,
  outOfBudget,
  type WorkloadRun,
  inSession,
} from './workload.js';

/**
 * burst: `jobs` jobs all due within one second [T, T + 1 s), created (batched) at least `leadMs`
 * ahead (more when calibration says creating takes longer; see leadFor).
 * Figures: time from T until every job started (NaN if some did not within `capMs`), peak starts
 * per second (sliding 1 s window), early, lost, lag. Each repetition runs in a fresh session.
 */
const CALIBRATION_JOBS = 4_000;
const MAX_LEAD_MS = 120_000;

/**
 * The burst must be created (and, for ours, committed by the scheduler) before its due second, or
 * the figure would measure creation. So the lead is fitted per session: a calibration set of
 * far-future jobs is created first and the lead is 1.5 × the extrapolated time plus 3 s, at least
 * `minLeadMs`, at most 2 minutes.
 */
async function leadFor(
  s: SystemSession,
  ctx: WorkloadContext,
  jobs: number,
  minLeadMs: number,
): Promise<number> {
  const due = new Float64Array(CALIBRATION_JOBS);
  const far = Date.now() + 86_400_000;
  for (let i = 0; i < due.length; i++) due[i] = far + i;
  const log = ctx.hub.open(due);
  const t0 = Date.now();
  await s.createBatched(log, 0, due.length);
  if (s.uncommitted) while ((await s.uncommitted()) > 0 && Date.now() - t0 < 30_000) await sleep(100);
  ctx.hub.close(log);
  const perJob = (Date.now() - t0) / CALIBRATION_JOBS;
  return Math.round(Math.min(MAX_LEAD_MS, Math.max(minLeadMs, 1.5 * perJob * jobs + 3_000)));
}

export async function burst(f: SystemFactory, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  const p = ctx.plan.burst;
  const reps: RepFigures[] = [];
  const cpu: CpuWindow[] = [];
  const notes: string[] = [];
  let evidence: Record<string, unknown> | undefined;
  for (let rep = 0; rep < ctx.plan.reps; rep++) {
    if (outOfBudget(ctx, rep, notes)) break;
    await inSession(f, async (s) => {
      const lead = await leadFor(s, ctx, p.jobs, p.leadMs);
      const t = Date.now() + lead;
      const log = ctx.hub.open(dueUniform(p.jobs, t, 1000, 2000 + rep));
      const c0 = Date.now();
      await s.createBatched(log, 0, p.jobs);
      const createMs = Date.now() - c0;
      if (Date.now() > t) notes.push(`rep ${rep + 1}: creating took ${createMs} ms, past the due second`);
      if (s.uncommitted) {
        while (Date.now() < t - 250 && (await s.uncommitted()) > 0)
          await new Promise((r) => setTimeout(r, 250));
      }
      await sleepUntil(t);
      const w = cpuWindow(() => ({ ...s.cpuGroups(), bench: [process.pid] }));
      const all = await log.waitAll(t + p.capMs);
      cpu.push(w.end());
      const starts = log.sortedStarts();
      const last = starts.length ? starts[starts.length - 1]! : NaN;
      const allStartedMs = all ? last - t : NaN;
      const lag = log.lag();
      const peak = log.peakPerSec(1000);
      // Ours only (the bench's tap reads the dispatch topics): each repetition's dispatch figures,
      // so the JSON shows their spread, not only the last repetition's hop breakdown.
      if (s.evidence) evidence = await s.evidence(log, () => true);
      reps.push({
        lagMs: { p50: lag.p50, p99: lag.p99, p999: lag.p999, max: lag.max },
        early: log.early,
        lost: log.lost,
        duplicates: log.duplicates,
        jobsPerSec: peak,
        extra: {
          allStartedMs,
          createMs,
          leadMs: lead,
          startedWithinCap: log.started,
          ...(s.evidence ? onKafkaFigures(log, t) : {}),
        },
      });
      ctx.say(
        `  rep ${rep + 1}: all ${p.jobs} started ${all ? `${round(allStartedMs)} ms after T` : `NOT within ${p.capMs} ms (${log.started} did)`}; peak ${round(peak)} jobs/s; p99 lag ${lag.p99} ms; early ${log.early}`,
      );
      ctx.hub.close(log);
    });
  }
  return [{ system: f.system, workload: 'burst', reps, cpu, evidence, notes }];
}

/**
 * When the last dispatch record of the burst was on Kafka (broker append time), after the start
 * of the due second (`allOnKafkaMs`), and the largest due → on Kafka of any one job
 * (`onKafkaLagMaxMs`, the scheduler issue's figure); NaN while some record was never seen.
 */
export function onKafkaFigures(log: StartLog, t: number): { allOnKafkaMs: number; onKafkaLagMaxMs: number } {
  let last = -Infinity;
  let worst = -Infinity;
  for (let i = 0; i < log.kafkaTs.length; i++) {
    const k = log.kafkaTs[i]!;
    if (Number.isNaN(k)) return { allOnKafkaMs: NaN, onKafkaLagMaxMs: NaN };
    if (k > last) last = k;
    if (k - log.due[i]! > worst) worst = k - log.due[i]!;
  }
  return { allOnKafkaMs: last - t, onKafkaLagMaxMs: worst };
}
