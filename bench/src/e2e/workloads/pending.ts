import type { CpuWindow } from '../process-cpu.js';
import { cpuWindow } from '../process-cpu.js';
import type { SystemFactory, SystemSession } from '../systems/system.js';
import {
  dueUniform,
  round,
  sleep,
  sleepUntil,
  type RepFigures,
  type WorkloadContext,
  type WorkloadRun,
  inSession,
} from './workload.js';

/**
 * pending: `jobs` jobs due between `fromMs` and `fromMs + spanMs` from now (beyond our 10-minute
 * wheel horizon) are created; the bytes they occupy in each system's store are measured as the
 * difference before/after (ours: job + command_applied tables with indexes in Postgres, and the
 * scheduler's RSS; pg-boss: the queue's job partition with indexes; BullMQ: Redis used_memory).
 * The load runs once (its figure is a size, not a timing); then `reps` probes of `probeRate`
 * jobs/s for `probeMs` measure the lag of jobs due meanwhile.
 */
export async function pending(f: SystemFactory, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  return inSession(f, (s) => pendingIn(s, ctx));
}

async function pendingIn(s: SystemSession, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  const p = ctx.plan.pending;
  const notes: string[] = [];
  await sleep(2_000);
  const before = await s.footprint();
  const log = ctx.hub.open(dueUniform(p.jobs, Date.now() + p.fromMs, p.spanMs, 3000));
  const t0 = Date.now();
  const w = cpuWindow(() => ({ ...s.cpuGroups(), bench: [process.pid] }));
  let created = 0;
  const chunk = 50_000;
  for (let lo = 0; lo < p.jobs && Date.now() - t0 < p.loadCapMs; lo += chunk) {
    const hi = Math.min(p.jobs, lo + chunk);
    await s.createBatched(log, lo, hi);
    created = hi;
  }
  const ackMs = Date.now() - t0;
  let commitMs = NaN;
  if (s.uncommitted) {
    while (Date.now() - t0 < p.loadCapMs * 1.5) {
      if ((await s.uncommitted()) === 0) {
        commitMs = Date.now() - t0;
        break;
      }
      await sleep(500);
    }
    if (Number.isNaN(commitMs))
      notes.push(`scheduler had not committed all ${created} creates within the cap`);
  }
  const loadCpu = w.end();
  if (created < p.jobs) notes.push(`load capped at ${p.loadCapMs} ms: ${created} of ${p.jobs} jobs created`);
  await sleep(3_000);
  const after = await s.footprint();
  const perJob = (after.storeBytes - before.storeBytes) / created;
  const extra: Record<string, number> = {
    pendingJobs: created,
    loadJobsPerSec: round((created * 1000) / ackMs),
  };
  if (!Number.isNaN(commitMs)) extra.loadCommittedJobsPerSec = round((created * 1000) / commitMs);
  for (const [k, v] of Object.entries(after.detail)) {
    const b = before.detail[k];
    if (k === 'wheelEntries') extra.wheelEntriesAfterLoad = v;
    else if (b !== undefined && Number.isFinite(v)) extra[`${k}BytesPerJob`] = round((v - b) / created, 1);
  }
  if (after.detail.schedulerRss !== undefined) {
    extra.schedulerRssMiBBefore = round(before.detail.schedulerRss! / 2 ** 20, 1);
    extra.schedulerRssMiB = round(after.detail.schedulerRss / 2 ** 20, 1);
  }
  ctx.say(
    `  ${created} pending jobs: ${round(perJob, 1)} bytes/job in the store; created at ${extra.loadJobsPerSec} jobs/s${extra.loadCommittedJobsPerSec ? ` (${extra.loadCommittedJobsPerSec}/s committed)` : ''}${extra.schedulerRssMiB ? `; scheduler RSS ${extra.schedulerRssMiB} MiB` : ''}`,
  );
  ctx.hub.close(log);

  // Probes: jobs due meanwhile.
  const reps: RepFigures[] = [];
  const cpu: CpuWindow[] = [loadCpu];
  // The probes are short and bounded (reps × (3 s + probeMs + ≤ 10 s)); the load above already
  // used most of the workload's budget, so they are not cut by it.
  for (let rep = 0; rep < ctx.plan.reps; rep++) {
    const n = Math.round((p.probeRate * p.probeMs) / 1000);
    const t1 = Date.now() + 3_000;
    const probe = ctx.hub.open(dueUniform(n, t1, p.probeMs, 3100 + rep));
    await s.createBatched(probe, 0, n);
    await sleepUntil(t1);
    const pw = cpuWindow(() => ({ ...s.cpuGroups(), bench: [process.pid] }));
    await probe.waitAll(t1 + p.probeMs + 10_000);
    cpu.push(pw.end());
    const lag = probe.lag();
    reps.push({
      bytesPerPendingJob: round(perJob, 1),
      lagMs: { p50: lag.p50, p99: lag.p99, p999: lag.p999, max: lag.max },
      early: probe.early,
      lost: probe.lost,
      duplicates: probe.duplicates,
      extra,
    });
    ctx.say(
      `  probe ${rep + 1}: ${n} jobs due meanwhile: p50 ${lag.p50} p99 ${lag.p99} max ${lag.max} ms; early ${probe.early} lost ${probe.lost}`,
    );
    ctx.hub.close(probe);
  }
  return [{ system: s.system, workload: 'pending', reps, cpu, notes }];
}
