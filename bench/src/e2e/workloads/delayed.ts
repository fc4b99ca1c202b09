import type { SystemFactory } from '../systems/system.js';
import type { CpuWindow } from '../process-cpu.js';
import { cpuWindow } from '../process-cpu.js';
import {
  dueUniform,
  round,
  sleepUntil,
  type RepFigures,
  type WorkloadContext,
  outOfBudget,
  type WorkloadRun,
  inSession,
  dbWork,
} from './workload.js';

/**
 * delayed: `jobs` jobs due uniformly over `windowMs`, starting `leadMs` after the bench begins to
 * create them (created in due order, batched). Lag = handler start − due. Jobs due in the first
 * `warmupMs` of the window are the warm-up: counted for early/lost/duplicates, left out of the lag
 * histogram. The CPU window covers the measured part of the due window. Each repetition runs in a
 * fresh session, so a backlog one leaves behind cannot slow the next.
 */
export async function delayed(f: SystemFactory, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  const p = ctx.plan.delayed;
  const reps: RepFigures[] = [];
  const cpu: CpuWindow[] = [];
  const notes: string[] = [];
  // Per-hop evidence of every repetition; the report keeps the one whose p99 is the median.
  const evidenceOf: { p99: number; evidence: Record<string, unknown> }[] = [];
  for (let rep = 0; rep < ctx.plan.reps; rep++) {
    if (outOfBudget(ctx, rep, notes)) break;
    await inSession(f, async (s) => {
      const t0 = Date.now() + p.leadMs;
      const log = ctx.hub.open(dueUniform(p.jobs, t0, p.windowMs, 1000 + rep));
      const c0 = Date.now();
      await s.createBatched(log, 0, p.jobs);
      const acceptMs = Date.now() - c0;
      if (Date.now() > t0)
        notes.push(`rep ${rep + 1}: creating took ${acceptMs} ms, past the first due time`);
      let uncommittedAtFirstDue: number | undefined;
      if (s.uncommitted) {
        // Stricter acceptance (ours): creates the scheduler had not committed when the set fell due.
        while (Date.now() < t0 - 250 && (uncommittedAtFirstDue = await s.uncommitted()) > 0)
          await new Promise((r) => setTimeout(r, 250));
      }
      await sleepUntil(t0 + p.warmupMs);
      const w = cpuWindow(() => ({ ...s.cpuGroups(), bench: [process.pid] }));
      const work = await dbWork(s);
      const startedBefore = log.started;
      await sleepUntil(t0 + p.windowMs);
      cpu.push(w.end());
      const perJob = await work(log.started - startedBefore);
      await log.waitAll(t0 + p.windowMs + p.tailMs);
      const measured = (i: number) => log.due[i]! >= t0 + p.warmupMs;
      const lag = log.lag(measured);
      // Ours only (after the bench's tap has read the dispatch topics): the scheduler issue's figure,
      // due → on Kafka, for every repetition, not only for the one whose evidence the report keeps.
      const evidence = s.evidence ? await s.evidence(log, measured) : undefined;
      const onKafka = evidence ? log.hop(log.due, log.kafkaTs, measured) : undefined;
      reps.push({
        lagMs: { p50: lag.p50, p99: lag.p99, p999: lag.p999, max: lag.max },
        early: log.early,
        lost: log.lost,
        duplicates: log.duplicates,
        extra: {
          createMs: acceptMs,
          measuredJobs: lag.count,
          ...perJob,
          ...(onKafka ? { onKafkaP99Ms: onKafka.p99, onKafkaP999Ms: onKafka.p999 } : {}),
          ...(uncommittedAtFirstDue !== undefined ? { uncommittedAtFirstDue } : {}),
        },
      });
      ctx.say(
        `  rep ${rep + 1}: p50 ${lag.p50} p99 ${lag.p99} p99.9 ${lag.p999} max ${lag.max} ms; early ${log.early} lost ${log.lost} dup ${log.duplicates}; created in ${round(acceptMs / 1000, 1)} s`,
      );
      if (evidence) evidenceOf.push({ p99: lag.p99, evidence });
      if (log.lost > 0)
        notes.push(
          `rep ${rep + 1}: ${log.lost} jobs had not started ${p.tailMs / 1000} s after the window (counted lost; the session is closed with its backlog)` +
            (s.evidence ? `; ${log.lostAfterDispatch} of them had their dispatch record on Kafka` : ''),
        );
      ctx.hub.close(log);
    });
  }
  const byP99 = [...evidenceOf].sort((a, b) => a.p99 - b.p99);
  const evidence = byP99[Math.floor((byP99.length - 1) / 2)]?.evidence;
  return [{ system: f.system, workload: 'delayed', reps, cpu, evidence, notes }];
}
