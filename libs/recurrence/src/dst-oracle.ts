/**
 * Test support, not exported: a slow, independent account of a zone's clock, straight from
 * `Intl.DateTimeFormat` (no luxon, none of the library's code), for tests to check the library against.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The local wall clock at instant `atMs`, as wall ms (local date-time encoded as if UTC). */
export function wallAt(zone: string, atMs: number): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(new Date(atMs)))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const ms = ((atMs % 1000) + 1000) % 1000;
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!, ms);
}

export function offsetAt(zone: string, atMs: number): number {
  return wallAt(zone, atMs) - atMs;
}

export interface Transition {
  /** First instant with the new offset. */
  atMs: number;
  beforeMs: number;
  afterMs: number;
}

/** Offset changes in [fromMs, toMs), at most `max`: probes every `stepMs`, bisects to the millisecond. */
export function transitions(
  zone: string,
  fromMs: number,
  toMs: number,
  max = Number.POSITIVE_INFINITY,
  stepMs = 3 * 3_600_000,
): Transition[] {
  const out: Transition[] = [];
  const step = stepMs;
  let prev = offsetAt(zone, fromMs);
  for (let t = fromMs; t < toMs && out.length < max; t += step) {
    const next = offsetAt(zone, t + step);
    if (next === prev) continue;
    let lo = t;
    let hi = t + step;
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2);
      if (offsetAt(zone, mid) === prev) lo = mid;
      else hi = mid;
    }
    out.push({ atMs: hi, beforeMs: prev, afterMs: offsetAt(zone, hi) });
    prev = next;
  }
  return out;
}

/** Every instant whose wall time is `wallMs`, by brute force over the offsets around it. */
export function instantsOf(zone: string, wallMs: number): number[] {
  const day = 86_400_000;
  const offsets = new Set([
    offsetAt(zone, wallMs - day),
    offsetAt(zone, wallMs),
    offsetAt(zone, wallMs + day),
  ]);
  const out = [...offsets].map((o) => wallMs - o).filter((t) => wallAt(zone, t) === wallMs);
  return [...new Set(out)].sort((a, b) => a - b);
}

/** 'YYYY-MM-DD' of a wall ms. */
export const dateOf = (wallMs: number) => new Date(wallMs).toISOString().slice(0, 10);
/** 'YYYY-MM-DDTHH:mm:ss' of a wall ms. */
export const isoWall = (wallMs: number) => new Date(wallMs).toISOString().slice(0, 19);
