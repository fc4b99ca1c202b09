import type { CpuWindow } from '../process-cpu.js';
import type { RecoveryTarget, SystemFactory, SystemSession } from '../systems/system.js';
import {
  dueUniform,
  round,
  sleep,
  sleepUntil,
  withCpu,
  type RepFigures,
  type WorkloadContext,
  outOfBudget,
  type WorkloadRun,
  inSession,
} from './workload.js';

/** A start is "on time" when its lag is at most max(100 ms, 2 × the pre-kill p99 of the same run). */
const ON_TIME_FLOOR_MS = 100;

/**
 * recovery: a delayed stream (`rate` jobs/s due over `durationMs`); at `killAtMs` into it the
 * target process is killed with SIGKILL and a fresh one started at once (as a supervisor would).
 * Figures: lost (never started by the end of the grace period), duplicates (started more than
 * once), early, and recoveryMs = kill → first start, of a job due after the kill, that was on
 * time. The run always lasts until `graceMs` after the window, so late re-deliveries are counted.
 * Every run has a fresh session, so one run's backlog cannot hold up the next.
 */
export async function recovery(f: SystemFactory, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  const p = ctx.plan.recovery;
  const targets: readonly RecoveryTarget[] = p.allTargets ? f.recoveryTargets : f.recoveryTargets.slice(0, 1);
  const out: WorkloadRun[] = [];
  for (const target of targets) {
    const reps: RepFigures[] = [];
    const cpu: CpuWindow[] = [];
    const notes: string[] = [];
    const pendingJobs = target === 'scheduler' ? p.pendingJobs : 0;
    for (let rep = 0; rep < p.reps; rep++) {
      if (outOfBudget(ctx, rep, notes)) break;
      await inSession(f, (s) => once(s, target, pendingJobs, rep, reps, cpu, notes, ctx));
    }
    const variant =
      `kill -9 ${target}` + (pendingJobs > 0 ? `, ${pendingLabel(pendingJobs)} pending in the wheel` : '');
    out.push({ system: f.system, workload: 'recovery', variant, reps, cpu, notes });
  }
  return out;
}

/** 1M, 20k, 1,500. */
function pendingLabel(n: number): string {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1_000 && n % 1_000 === 0) return `${n / 1_000}k`;
  return n.toLocaleString('en-US');
}

/**
 * Creates `n` jobs due inside the wheel's horizon (and after the run) and waits until the scheduler
 * has committed them and its wheel holds them: what a killed owner held in memory. Returns the
 * figures for the repetition's `extra`.
 */
async function loadPending(
  s: SystemSession,
  n: number,
  rep: number,
  ctx: WorkloadContext,
  notes: string[],
): Promise<Record<string, number>> {
  const p = ctx.plan.recovery;
  const log = ctx.hub.open(dueUniform(n, Date.now() + p.pendingFromMs, p.pendingSpanMs, 4200 + rep));
  const t0 = Date.now();
  let created = 0;
  for (let lo = 0; lo < n && Date.now() - t0 < p.pendingLoadCapMs; lo += 50_000) {
    const hi = Math.min(n, lo + 50_000);
    await s.createBatched(log, lo, hi);
    created = hi;
  }
  while (s.uncommitted && Date.now() - t0 < p.pendingLoadCapMs && (await s.uncommitted()) > 0)
    await sleep(250);
  const entries = async () => (s.wheelEntries ? await s.wheelEntries() : NaN);
  let wheel = await entries();
  while (Number.isFinite(wheel) && wheel < created && Date.now() - t0 < p.pendingLoadCapMs) {
    await sleep(250);
    wheel = await entries();
  }
  const loadMs = Date.now() - t0;
  ctx.hub.close(log);
  if (created < n)
    notes.push(`rep ${rep + 1}: pending load capped at ${p.pendingLoadCapMs} ms: ${created} of ${n} created`);
  if (Number.isFinite(wheel) && wheel < created)
    notes.push(`rep ${rep + 1}: the wheel held ${wheel} of the ${created} pending jobs when the run began`);
  ctx.say(`  ${created} pending jobs created and in the wheel (${wheel} entries) after ${loadMs} ms`);
  return { pendingJobs: created, wheelEntriesBeforeKill: wheel, pendingLoadMs: loadMs };
}

async function once(
  s: SystemSession,
  target: RecoveryTarget,
  pendingJobs: number,
  rep: number,
  reps: RepFigures[],
  cpu: CpuWindow[],
  notes: string[],
  ctx: WorkloadContext,
): Promise<void> {
  const p = ctx.plan.recovery;
  {
    {
      const pending = pendingJobs > 0 ? await loadPending(s, pendingJobs, rep, ctx, notes) : {};
      const n = Math.round((p.rate * p.durationMs) / 1000);
      const t0 = Date.now() + 5_000;
      const log = ctx.hub.open(dueUniform(n, t0, p.durationMs, 4000 + rep));
      await s.createBatched(log, 0, n);
      await sleepUntil(t0);
      const { value: k, cpu: c } = await withCpu(s, async () => {
        await sleepUntil(t0 + p.killAtMs);
        const r = await s.kill9AndRestart(target);
        // Wait the whole grace period even when every job started: re-deliveries come late.
        await sleepUntil(t0 + p.durationMs + p.graceMs);
        return r;
      });
      cpu.push(c);
      const before = log.lag((i) => log.due[i]! < k.killedAtMs);
      const threshold = Math.max(ON_TIME_FLOOR_MS, 2 * before.p99);
      let firstOnTime = Infinity;
      let worstAfter = 0;
      for (let i = 0; i < log.n; i++) {
        const st = log.first[i]!;
        if (Number.isNaN(st) || log.due[i]! < k.killedAtMs) continue;
        const lag = st - log.due[i]!;
        if (lag <= threshold && st >= k.killedAtMs) firstOnTime = Math.min(firstOnTime, st);
        if (log.due[i]! < k.killedAtMs + 30_000) worstAfter = Math.max(worstAfter, lag);
      }
      const recoveryMs = Number.isFinite(firstOnTime) ? firstOnTime - k.killedAtMs : NaN;
      // A job whose start report died with a killed worker was not lost: the system's own store
      // says it started (and its lease or stall timer runs it again later). Lost = never started.
      let unreported = 0;
      if (log.lost > 0 && s.ranPerStore) {
        const unseen: number[] = [];
        for (let i = 0; i < log.n; i++) if (Number.isNaN(log.first[i]!)) unseen.push(i);
        unreported = await s.ranPerStore(log, unseen);
      }
      const lost = log.lost - unreported;
      reps.push({
        lost,
        duplicates: log.duplicates,
        early: log.early,
        recoveryMs: round(recoveryMs),
        extra: {
          ...pending,
          restartReadyMs: k.readyAtMs - k.killedAtMs,
          onTimeThresholdMs: threshold,
          preKillP99Ms: before.p99,
          worstLagOfJobsDueIn30sAfterKillMs: round(worstAfter),
          startedButUnreported: unreported,
        },
      });
      ctx.say(
        `  kill -9 ${target}, rep ${rep + 1}: recovery ${round(recoveryMs)} ms (on time ≤ ${threshold} ms; restart ready after ${k.readyAtMs - k.killedAtMs} ms); lost ${lost} dup ${log.duplicates} early ${log.early}; worst lag after kill ${round(worstAfter)} ms`,
      );
      if (log.lost > 0) {
        notes.push(
          `rep ${rep + 1}: ${log.lost} jobs not seen starting within ${p.graceMs} ms after the window` +
            (s.ranPerStore
              ? `; the store shows ${unreported} of them started (their start report died with the worker), so ${lost} lost`
              : ''),
        );
      }
      ctx.hub.close(log);
    }
  }
}
