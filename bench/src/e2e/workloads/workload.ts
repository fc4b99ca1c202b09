import { cpuWindow, type CpuWindow } from '../process-cpu.js';
import type { Plan } from '../plan.js';
import type { LagMs, StartHub } from '../start-log.js';
import type { SystemFactory, SystemName, SystemSession } from '../systems/system.js';

export const WORKLOADS = ['delayed', 'burst', 'ingest', 'drain', 'pending', 'recovery'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

/** The figures of one repetition; a field that does not apply is left out. */
export interface RepFigures {
  lagMs?: LagMs;
  early?: number;
  lost?: number;
  duplicates?: number;
  jobsPerSec?: number;
  bytesPerPendingJob?: number;
  recoveryMs?: number;
  /** Secondary figures (committed rate, time until all started, RSS per job, …). */
  extra?: Record<string, number>;
}

export interface WorkloadRun {
  system: SystemName;
  workload: WorkloadName;
  /** e.g. `batched` / `single` for ingest, the killed process for recovery. */
  variant?: string;
  reps: RepFigures[];
  cpu: CpuWindow[];
  /** Per-system evidence (ours: hop breakdown of the last repetition). */
  evidence?: Record<string, unknown>;
  notes: string[];
}

export interface WorkloadContext {
  plan: Plan;
  hub: StartHub;
  /** When the workload started, and the epoch ms by which its repetitions should have ended. */
  startedAtMs: number;
  deadlineMs: number;
  say(line: string): void;
}

/** A workload opens the sessions it needs from the factory: a fresh one per workload or per repetition. */
export type Workload = (f: SystemFactory, ctx: WorkloadContext) => Promise<WorkloadRun[]>;

/** Runs `body` in a fresh session (own queue, processes and, for ours, schema and topics), closed after. */
export async function inSession<T>(f: SystemFactory, body: (s: SystemSession) => Promise<T>): Promise<T> {
  const s = await f.open();
  try {
    return await body(s);
  } finally {
    await s.close();
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));
export const sleepUntil = (epochMs: number) => sleep(epochMs - Date.now());

/** A small seeded PRNG (mulberry32), so every system gets the same due-time pattern. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` integer due times uniform over [t0, t0 + spanMs), sorted (jobs are created in due order). */
export function dueUniform(n: number, t0: number, spanMs: number, seed: number): Float64Array {
  const r = rng(seed);
  const due = new Float64Array(n);
  for (let i = 0; i < n; i++) due[i] = t0 + Math.floor(r() * spanMs);
  return due.sort();
}

/** Runs `body` inside a CPU window over the session's processes plus the bench itself. */
export async function withCpu<T>(
  s: SystemSession,
  body: () => Promise<T>,
): Promise<{ value: T; cpu: CpuWindow }> {
  const w = cpuWindow(() => ({ ...s.cpuGroups(), bench: [process.pid] }));
  const value = await body();
  return { value, cpu: w.end() };
}

export const round = (x: number, digits = 0) => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

/**
 * True (and noted) when another repetition would end past the workload's budget, judged by the
 * mean length of the repetitions so far. The first repetition always runs.
 */
export function outOfBudget(ctx: WorkloadContext, rep: number, notes: string[]): boolean {
  if (rep === 0) return false;
  const perRep = (Date.now() - ctx.startedAtMs) / rep;
  if (Date.now() + perRep <= ctx.deadlineMs) return false;
  notes.push(`stopped after ${rep} repetition(s): the workload's time budget ran out`);
  ctx.say(`  (time budget reached after ${rep} repetition(s))`);
  return true;
}

/** Postgres work per started job over a window (systems on Postgres); empty otherwise. */
export async function dbWork(
  s: SystemSession,
): Promise<(started: number) => Promise<Record<string, number>>> {
  if (!s.dbCounters) return async () => ({});
  const a = await s.dbCounters();
  return async (started: number): Promise<Record<string, number>> => {
    const b = await s.dbCounters!();
    if (started <= 0) return {};
    return {
      walBytesPerJob: round((b.walBytes - a.walBytes) / started),
      commitsPerJob: round((b.commits - a.commits) / started, 2),
    };
  };
}
