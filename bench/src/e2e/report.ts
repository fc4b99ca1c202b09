import type { CpuWindow } from './process-cpu.js';
import { spreadOf, type LagMs, type Spread } from './start-log.js';
import type { SystemName } from './systems/system.js';
import type { RepFigures, WorkloadName, WorkloadRun } from './workloads/workload.js';

/** One row of the JSON `results`: medians over repetitions; counts are totals over them. */
export type E2eResult = {
  system: SystemName;
  workload: WorkloadName;
  variant?: string;
  lagMs?: LagMs;
  early?: number;
  lost?: number;
  duplicates?: number;
  jobsPerSec?: number;
  bytesPerPendingJob?: number;
  recoveryMs?: number;
  repetitions: number;
  /** min/median/max over repetitions of every timed figure. */
  spread: Record<string, Spread>;
  extra?: Record<string, number>;
  /** Mean CPU per process group over the measured windows, % of one core (200 = both cores). */
  cpuPct?: Record<string, number>;
  evidence?: Record<string, unknown>;
  notes?: string[];
};

const sum = (xs: (number | undefined)[]) =>
  xs.some((x) => x !== undefined) ? xs.reduce<number>((a, x) => a + (x ?? 0), 0) : undefined;

function meanCpu(ws: CpuWindow[]): Record<string, number> | undefined {
  if (ws.length === 0) return undefined;
  const acc: Record<string, number> = {};
  for (const w of ws) {
    for (const [k, v] of Object.entries(w.byGroup)) acc[k] = (acc[k] ?? 0) + v / ws.length;
    acc['other processes'] = (acc['other processes'] ?? 0) + w.othersPct / ws.length;
    acc['machine (% of all cores)'] = (acc['machine (% of all cores)'] ?? 0) + w.machinePct / ws.length;
  }
  return Object.fromEntries(Object.entries(acc).map(([k, v]) => [k, Math.round(v)]));
}

export function aggregate(run: WorkloadRun): E2eResult {
  const reps = run.reps;
  const spread: Record<string, Spread> = {};
  const med = (name: string, pick: (r: RepFigures) => number | undefined): number | undefined => {
    const vals = reps.map(pick).filter((v): v is number => v !== undefined);
    if (vals.length === 0) return undefined;
    const s = spreadOf(vals);
    spread[name] = s;
    return s.median;
  };
  const p50 = med('lagMs.p50', (r) => r.lagMs?.p50);
  const p99 = med('lagMs.p99', (r) => r.lagMs?.p99);
  const p999 = med('lagMs.p999', (r) => r.lagMs?.p999);
  const max = med('lagMs.max', (r) => r.lagMs?.max);
  const out: E2eResult = { system: run.system, workload: run.workload, repetitions: reps.length, spread };
  if (run.variant) out.variant = run.variant;
  if (p50 !== undefined) out.lagMs = { p50, p99: p99!, p999: p999!, max: max! };
  const early = sum(reps.map((r) => r.early));
  const lost = sum(reps.map((r) => r.lost));
  const dup = sum(reps.map((r) => r.duplicates));
  if (early !== undefined) out.early = early;
  if (lost !== undefined) out.lost = lost;
  if (dup !== undefined) out.duplicates = dup;
  const jps = med('jobsPerSec', (r) => r.jobsPerSec);
  if (jps !== undefined) out.jobsPerSec = jps;
  const bpj = med('bytesPerPendingJob', (r) => r.bytesPerPendingJob);
  if (bpj !== undefined) out.bytesPerPendingJob = bpj;
  const rec = med('recoveryMs', (r) => r.recoveryMs);
  if (rec !== undefined) out.recoveryMs = rec;
  const extraKeys = new Set(reps.flatMap((r) => Object.keys(r.extra ?? {})));
  if (extraKeys.size > 0) {
    out.extra = {};
    for (const k of extraKeys) {
      const v = med(`extra.${k}`, (r) => r.extra?.[k]);
      if (v !== undefined) out.extra[k] = v;
    }
  }
  const cpu = meanCpu(run.cpu);
  if (cpu) out.cpuPct = cpu;
  if (run.evidence) out.evidence = run.evidence;
  if (run.notes.length) out.notes = run.notes;
  return out;
}

function cell(r: E2eResult, key: string, value: number | undefined, digits = 0): string {
  if (value === undefined || Number.isNaN(value)) return value === undefined ? '' : 'n/a';
  const f = (x: number) => (digits ? x.toFixed(digits) : Math.round(x).toLocaleString('en-US'));
  const s = r.spread[key];
  if (!s || r.repetitions < 2 || s.min === s.max) return f(value);
  return `${f(value)} (${f(s.min)}–${f(s.max)})`;
}

/** The markdown table: medians with (min–max) over repetitions; counts are totals. */
export function table(results: E2eResult[]): string {
  const head = [
    'workload',
    'system',
    'lag p50 ms',
    'p99 ms',
    'p99.9 ms',
    'max ms',
    'early',
    'lost',
    'dup',
    'jobs/s',
    'B/pending job',
    'recovery ms',
    'reps',
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of results) {
    const name = r.variant ? `${r.workload} (${r.variant})` : r.workload;
    lines.push(
      `| ${[
        name,
        r.system,
        cell(r, 'lagMs.p50', r.lagMs?.p50),
        cell(r, 'lagMs.p99', r.lagMs?.p99),
        cell(r, 'lagMs.p999', r.lagMs?.p999),
        cell(r, 'lagMs.max', r.lagMs?.max),
        r.early ?? '',
        r.lost ?? '',
        r.duplicates ?? '',
        cell(r, 'jobsPerSec', r.jobsPerSec),
        cell(r, 'bytesPerPendingJob', r.bytesPerPendingJob),
        cell(r, 'recoveryMs', r.recoveryMs),
        r.repetitions,
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

export interface Goal {
  goal: string;
  met: boolean | null;
  detail: string;
}

/** The goals, checked on this run's medians (null: a figure is missing). */
export function goals(results: E2eResult[]): Goal[] {
  const get = (system: SystemName, workload: WorkloadName, variant?: string) =>
    results.find(
      (r) =>
        r.system === system && r.workload === workload && (variant === undefined || r.variant === variant),
    );
  const out: Goal[] = [];
  const ratio = (a?: number, b?: number) => (a !== undefined && b !== undefined && b !== 0 ? a / b : NaN);
  const fx = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const check = (goal: string, met: boolean | null, detail: string) => out.push({ goal, met, detail });

  const d = get('ours', 'delayed');
  const dB = get('bullmq', 'delayed');
  const dP = get('pg-boss', 'delayed');
  if (d?.lagMs) {
    check('delayed: our p99 ≤ 25 ms', d.lagMs.p99 <= 25, `p99 ${d.lagMs.p99} ms`);
    const rb = ratio(d.lagMs.p99, dB?.lagMs?.p99);
    check(
      'delayed: our p99 ≤ ¼ of BullMQ',
      Number.isFinite(rb) ? rb <= 0.25 : null,
      `ours/BullMQ = ${fx(rb)}`,
    );
    const rp = ratio(d.lagMs.p99, dP?.lagMs?.p99);
    check(
      'delayed: our p99 ≤ 1/20 of pg-boss',
      Number.isFinite(rp) ? rp <= 0.05 : null,
      `ours/pg-boss = ${fx(rp, 3)}`,
    );
    check('delayed: 0 early, 0 lost', d.early === 0 && d.lost === 0, `early ${d.early}, lost ${d.lost}`);
  }
  const b = get('ours', 'burst');
  const bB = get('bullmq', 'burst');
  if (b) {
    const all = b.extra?.allStartedMs;
    check(
      'burst: all started within 5 s',
      all !== undefined && Number.isFinite(all) ? all <= 5_000 : false,
      `all started after ${fx(all ?? NaN, 0)} ms`,
    );
    const r = ratio(b.jobsPerSec, bB?.jobsPerSec);
    check('burst: peak rate ≥ BullMQ', Number.isFinite(r) ? r >= 1 : null, `ours/BullMQ = ${fx(r)}`);
    check('burst: 0 early', b.early === 0, `early ${b.early}`);
  }
  const dr = get('ours', 'drain');
  if (dr?.jobsPerSec !== undefined) {
    check('drain: ≥ 10,000 jobs/s', dr.jobsPerSec >= 10_000, `${Math.round(dr.jobsPerSec)} jobs/s`);
    const rp = ratio(dr.jobsPerSec, get('pg-boss', 'drain')?.jobsPerSec);
    check('drain: ≥ 2× pg-boss', Number.isFinite(rp) ? rp >= 2 : null, `ours/pg-boss = ${fx(rp)}`);
    const rb = ratio(dr.jobsPerSec, get('bullmq', 'drain')?.jobsPerSec);
    check('drain: ≥ 1× BullMQ', Number.isFinite(rb) ? rb >= 1 : null, `ours/BullMQ = ${fx(rb)}`);
  }
  const ing = get('ours', 'ingest', 'batched');
  if (ing?.jobsPerSec !== undefined) {
    const committed = ing.extra?.committedJobsPerSec;
    check(
      'ingest: ≥ 20,000 jobs/s batched, durable',
      ing.jobsPerSec >= 20_000,
      `${Math.round(ing.jobsPerSec)} jobs/s acked by Kafka (acks=all); ${committed !== undefined ? Math.round(committed) : 'n/a'} jobs/s committed to Postgres by the scheduler`,
    );
  }
  const pe = get('ours', 'pending');
  if (pe?.bytesPerPendingJob !== undefined) {
    const pp = get('pg-boss', 'pending')?.bytesPerPendingJob;
    const r = ratio(pe.bytesPerPendingJob, pp);
    check(
      'pending: ≤ pg-boss bytes per pending job (Postgres)',
      Number.isFinite(r) ? r <= 1 : null,
      `ours/pg-boss = ${fx(r)}`,
    );
    const rss = pe.extra?.schedulerRssBytesPerJob;
    const heap = pe.extra?.schedulerHeapUsedBytesPerJob;
    const wheel = pe.extra?.wheelEntriesAfterLoad;
    check(
      'pending: scheduler RSS bounded by the horizon',
      wheel !== undefined && heap !== undefined ? wheel < 1_000 && heap < 50 : null,
      `${fx(wheel ?? NaN, 0)} wheel entries after loading ${fx(pe.extra?.pendingJobs ?? NaN, 0)} jobs beyond the horizon; heap used grew ${fx(heap ?? NaN, 1)} B/job, RSS ${fx(rss ?? NaN, 1)} B/job (${pe.extra?.schedulerRssMiBBefore ?? '?'} → ${pe.extra?.schedulerRssMiB ?? '?'} MiB)`,
    );
  }
  const rs = results.find(
    (r) => r.system === 'ours' && r.workload === 'recovery' && r.variant?.startsWith('kill -9 scheduler'),
  );
  if (rs) {
    const ms = rs.recoveryMs;
    const pending = rs.extra?.pendingJobs;
    check(
      'recovery: kill -9 scheduler with 1M pending → on-time start within 10 s',
      ms !== undefined && Number.isFinite(ms) ? ms <= 10_000 && (pending ?? 0) >= 1_000_000 : false,
      `${fx(ms ?? NaN, 0)} ms to the first on-time handler start after the kill, with ${fx(pending ?? 0, 0)} jobs pending in the wheel (${fx(rs.extra?.wheelEntriesBeforeKill ?? NaN, 0)} entries)`,
    );
  }
  return out;
}
