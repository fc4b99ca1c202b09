import { readFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';

/**
 * CPU use of named process groups over a window, read from /proc (Linux): utime + stime of each
 * pid and of its descendants (Postgres backends are children of the postmaster). The figure is in
 * percent of one core, so 200 means both cores of this machine.
 */

const TICKS_PER_SEC = 100;

function statOf(pid: number): { ppid: number; ticks: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may contain spaces) start after the last ')'.
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) };
  } catch {
    return null;
  }
}

/** Ticks used so far by every process, and its parent. */
function snapshot(): Map<number, { ppid: number; ticks: number }> {
  const out = new Map<number, { ppid: number; ticks: number }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = statOf(Number(d));
    if (st) out.set(Number(d), st);
  }
  return out;
}

/**
 * Ticks used between two snapshots per group: each process counts for the group of its nearest
 * ancestor (itself included) that is a group root, so the bench's own children count for their
 * own group. A process that started in between counts in full; one that died counts nothing.
 */
function groupDelta(
  a: Map<number, { ppid: number; ticks: number }>,
  b: Map<number, { ppid: number; ticks: number }>,
  groups: Record<string, number[]>,
): Record<string, number> {
  const rootOf = new Map<number, string>();
  for (const [name, pids] of Object.entries(groups)) for (const p of pids) rootOf.set(p, name);
  const out: Record<string, number> = Object.fromEntries(Object.keys(groups).map((k) => [k, 0]));
  for (const [pid, now] of b) {
    const used = now.ticks - (a.get(pid)?.ticks ?? 0);
    if (used <= 0) continue;
    let p: number | undefined = pid;
    for (let depth = 0; p !== undefined && p > 1 && depth < 32; depth++) {
      const g = rootOf.get(p);
      if (g !== undefined) {
        out[g] = (out[g] ?? 0) + used;
        break;
      }
      p = b.get(p)?.ppid ?? a.get(p)?.ppid;
    }
  }
  return out;
}

function machineBusy(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = line[3]! + (line[4] ?? 0);
  const total = line.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

export interface CpuWindow {
  /** Percent of one core per group over the window. */
  byGroup: Record<string, number>;
  /** Whole machine, percent of all cores together (100 = saturated). */
  machinePct: number;
  /** Other processes on the machine (not in any group), percent of one core. */
  othersPct: number;
  seconds: number;
}

/**
 * Starts a CPU window over process groups (name → root pids); `end()` returns the figures. The
 * groups are asked for again at the end, so a process restarted meanwhile is counted too.
 */
export function cpuWindow(groups: () => Record<string, number[]>): { end(): CpuWindow } {
  const t0 = process.hrtime.bigint();
  const m0 = machineBusy();
  const g0 = groups();
  const before = snapshot();
  return {
    end() {
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const m1 = machineBusy();
      const byGroup: Record<string, number> = {};
      let ours = 0;
      const g1 = groups();
      const merged: Record<string, number[]> = { ...g0 };
      for (const [k, pids] of Object.entries(g1)) merged[k] = [...new Set([...(merged[k] ?? []), ...pids])];
      const delta = groupDelta(before, snapshot(), merged);
      for (const k of Object.keys(merged)) {
        const used = (delta[k] ?? 0) / TICKS_PER_SEC;
        byGroup[k] = Math.round((used / seconds) * 100);
        ours += used;
      }
      // /proc/stat's first line sums every core.
      const machineBusySec = (m1.busy - m0.busy) / TICKS_PER_SEC;
      const cores = cpus().length;
      const machinePct = Math.round((machineBusySec / seconds / cores) * 100);
      return {
        byGroup,
        machinePct,
        othersPct: Math.max(0, Math.round(((machineBusySec - ours) / seconds) * 100)),
        seconds: Math.round(seconds * 10) / 10,
      };
    },
  };
}
