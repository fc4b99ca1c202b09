/**
 * The `e2e` suite: our scheduler side by side with pg-boss and BullMQ on the same machine in the
 * same run. `runE2e(argv)` brings up what it needs (the local stack; pg-boss's database on the
 * stack's Postgres; a redis-server of its own for BullMQ), runs each system in turn through the
 * same workloads, prints one table plus the goals check, and returns the JSON document's body
 * (the bench runner adds `suite`, `machine` and `date`, and writes it with `--json FILE`).
 */
import { ensureStackUp } from '@sched/local-stack';
import type { BenchSuite, SuiteOutcome } from '../bench-suite.js';
import { machineInfo } from '../machine.js';
import { killStartedProcesses } from './child-process.js';
import { parseE2eArgs } from './options.js';
import { FULL, QUICK, type Plan } from './plan.js';
import { aggregate, goals, table, type E2eResult } from './report.js';
import { StartHub } from './start-log.js';
import { bullmqFactory } from './systems/bullmq.js';
import { oursFactory } from './systems/ours.js';
import { pgBossFactory } from './systems/pg-boss.js';
import type { SystemFactory, SystemName } from './systems/system.js';
import { burst } from './workloads/burst.js';
import { delayed } from './workloads/delayed.js';
import { drain } from './workloads/drain.js';
import { ingest } from './workloads/ingest.js';
import { pending } from './workloads/pending.js';
import { recovery } from './workloads/recovery.js';
import { warmUp } from './workloads/warm-up.js';
import type { Workload, WorkloadName, WorkloadRun } from './workloads/workload.js';

export { USAGE } from './options.js';

const WORKLOAD_FNS: Record<WorkloadName, Workload> = { delayed, burst, ingest, drain, pending, recovery };

/** The order workloads run in, per system (each in fresh sessions), and rows appear in the table. */
const RUN_ORDER: WorkloadName[] = ['delayed', 'burst', 'drain', 'ingest', 'pending', 'recovery'];

const say = (line: string) => process.stdout.write(`[e2e] ${line}\n`);

function describePlan(plan: Plan, workloads: WorkloadName[]): string {
  const d = plan.delayed;
  const lines = [
    `plan (${plan.mode}): ${plan.reps} repetition(s) per workload unless noted; a fresh session (queue, processes; for ours schema and topics) per workload, and per repetition for delayed and burst`,
    `  warm-up: before its first workload, ${plan.warmUp.jobs} jobs due over ${plan.warmUp.spanMs / 1000} s through each system, unmeasured`,
  ];
  if (workloads.includes('delayed'))
    lines.push(
      `  delayed: ${d.jobs} jobs due over ${d.windowMs / 1000} s, ${d.leadMs / 1000} s lead, first ${d.warmupMs / 1000} s of the window is warm-up`,
    );
  if (workloads.includes('burst'))
    lines.push(`  burst: ${plan.burst.jobs} jobs due within one second; cap ${plan.burst.capMs / 1000} s`);
  if (workloads.includes('drain'))
    lines.push(
      plan.drain.fixedRate !== undefined
        ? `  drain: no ramp (--drain-rate); ${plan.drain.confirmReps} × ${plan.drain.confirmMs / 1000} s at ${plan.drain.fixedRate} jobs/s`
        : `  drain: ramp ${plan.drain.startRate}/s ×${plan.drain.growth} per ${plan.drain.stepMs / 1000} s step (≤ ${plan.drain.maxSteps} steps), ${plan.drain.refineSteps} step(s) between the last held and the first failed, then ${plan.drain.confirmReps} × ${plan.drain.confirmMs / 1000} s at the last rate held`,
    );
  if (workloads.includes('ingest'))
    lines.push(
      `  ingest: ${plan.ingest.batchedJobs} batched; single: ≤ ${plan.ingest.singleJobs} jobs or ${plan.ingest.singleCapMs / 1000} s, ${plan.ingest.singleConcurrency} in flight`,
    );
  if (workloads.includes('pending'))
    lines.push(
      `  pending: ${plan.pending.jobs} jobs loaded once; ${plan.reps} probe(s) of ${plan.pending.probeRate}/s for ${plan.pending.probeMs / 1000} s`,
    );
  if (workloads.includes('recovery'))
    lines.push(
      `  recovery: ${plan.recovery.rate}/s for ${plan.recovery.durationMs / 1000} s, kill -9 at ${plan.recovery.killAtMs / 1000} s, ${plan.recovery.graceMs / 1000} s grace; ${plan.recovery.reps} repetition(s) per target${plan.recovery.allTargets ? '' : ' (first target only)'}` +
        (plan.recovery.pendingJobs > 0
          ? `; before a scheduler is killed, ${plan.recovery.pendingJobs} jobs are created due ${plan.recovery.pendingFromMs / 60_000}–${(plan.recovery.pendingFromMs + plan.recovery.pendingSpanMs) / 60_000} min ahead (in the wheel)`
          : ''),
    );
  return lines.join('\n');
}

export async function runE2e(argv: readonly string[]): Promise<SuiteOutcome> {
  const opts = parseE2eArgs(argv);
  const base = opts.quick ? QUICK : FULL;
  const withReps: Plan = opts.reps ? { ...base, reps: opts.reps } : base;
  const plan: Plan = opts.drainRate
    ? { ...withReps, drain: { ...withReps.drain, fixedRate: opts.drainRate } }
    : withReps;
  const startedAt = new Date();
  const m = machineInfo();
  say(
    `${m.cores} × ${m.cpuModel}, ${Math.round(m.memoryBytes / 2 ** 30)} GiB, ${m.os}, Node ${m.nodeVersion}; load average ${m.loadAverage1m} at start`,
  );
  say(describePlan(plan, opts.workloads));
  say('bringing the local stack up…');
  await ensureStackUp();

  const hub = new StartHub();
  const makers: Record<SystemName, () => SystemFactory> = {
    ours: () => oursFactory(hub),
    'pg-boss': () => pgBossFactory(hub),
    bullmq: () => bullmqFactory(hub),
  };
  const versions: Record<string, string> = { node: process.version, 'hdr-histogram-js': '' };
  const knobs: Record<string, Record<string, string | number>> = {};
  const runs: WorkloadRun[] = [];
  const onSignal = () => {
    killStartedProcesses();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (const system of opts.systems) {
      const f = makers[system]();
      try {
        const d = await f.describe();
        Object.assign(versions, d.versions);
        knobs[system] = d.knobs;
        try {
          say(`${system} / ${await warmUp(f, hub, plan.warmUp)}`);
        } catch (err) {
          say(`${system} / warm-up FAILED (the workloads run regardless): ${(err as Error).message}`);
        }
        for (const w of RUN_ORDER.filter((x) => opts.workloads.includes(x))) {
          say(`${system} / ${w}`);
          const t = Date.now();
          try {
            runs.push(
              ...(await WORKLOAD_FNS[w](f, {
                plan,
                hub,
                say,
                startedAtMs: t,
                deadlineMs: t + plan.budgetS[w] * 1000,
              })),
            );
          } catch (err) {
            say(`  FAILED: ${(err as Error).stack ?? String(err)}`);
            runs.push({
              system,
              workload: w,
              reps: [],
              cpu: [],
              notes: [`failed: ${(err as Error).message}`],
            });
          }
          say(`  (${Math.round((Date.now() - t) / 1000)} s)`);
        }
      } finally {
        await f.shutdown();
      }
    }
  } finally {
    killStartedProcesses();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  versions['hdr-histogram-js'] = (await import('./systems/host-info.js')).packageVersion('hdr-histogram-js');

  const results: E2eResult[] = runs
    .map(aggregate)
    .sort(
      (a, b) =>
        RUN_ORDER.indexOf(a.workload) - RUN_ORDER.indexOf(b.workload) ||
        opts.systems.indexOf(a.system) - opts.systems.indexOf(b.system),
    );
  const checked = goals(results);
  const elapsedS = Math.round((Date.now() - startedAt.getTime()) / 1000);
  process.stdout.write(
    `\n${table(results)}\n\nmedian (min–max) over repetitions; early/lost/dup are totals over repetitions\n\n`,
  );
  for (const g of checked)
    process.stdout.write(`${g.met === null ? '  ?  ' : g.met ? ' MET ' : 'MISS '} ${g.goal}: ${g.detail}\n`);
  for (const r of results) {
    if (r.notes?.length)
      process.stdout.write(
        `note ${r.system}/${r.workload}${r.variant ? ` (${r.variant})` : ''}: ${r.notes.join('; ')}\n`,
      );
  }
  say(`done in ${elapsedS} s`);
  return { mode: plan.mode, elapsedSeconds: elapsedS, plan, versions, knobs, goals: checked, results };
}

/** The suite as the bench runner (`bench/src/main.ts`) registers it. */
export const e2eSuite: BenchSuite = {
  name: 'e2e',
  description: 'end to end vs pg-boss and BullMQ: delayed, burst, ingest, drain, pending, recovery',
  run: runE2e,
};
