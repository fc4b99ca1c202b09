import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dateOf, instantsOf, isoWall, offsetAt, type Transition, transitions, wallAt } from './dst-oracle';
import { compileRecurrence, type DstRepeatedPolicy, type DstSkippedPolicy, type Occurrence } from './index';

/*
 * DST properties over 29 zones with DST (northern and southern, 30- and 60-minute and 2-hour shifts,
 * transitions at midnight, Ramadan suspensions) and 6 without, over 2026-2030. Each case compares
 * the library with an oracle that restates the policies over a brute-force, Intl-based view of the
 * zone (dst-oracle.ts), occurrence by occurrence, then checks the headline properties explicitly.
 *
 * The deterministic sweep covers every zone at a wall time inside its spring gap and its fall
 * overlap with the default policies; fast-check adds random zones, times and policies.
 * RECURRENCE_DST_RUNS (default 40) sets the random runs; RECURRENCE_DST_SEED replays a failure
 * (fast-check prints the seed and the counterexample).
 */
const RUNS = Number(process.env.RECURRENCE_DST_RUNS ?? 40);
const SEED =
  process.env.RECURRENCE_DST_SEED === undefined ? undefined : Number(process.env.RECURRENCE_DST_SEED);

const DST_ZONES = [
  'America/New_York',
  'America/Chicago',
  'America/Denver',
  'America/Los_Angeles',
  'America/Anchorage',
  'America/Halifax',
  'America/St_Johns',
  'America/Havana',
  'America/Santiago',
  'America/Nuuk',
  'Atlantic/Azores',
  'Europe/London',
  'Europe/Dublin',
  'Europe/Paris',
  'Europe/Helsinki',
  'Europe/Chisinau',
  'Europe/Lisbon',
  'Asia/Jerusalem',
  'Asia/Beirut',
  'Asia/Gaza',
  'Africa/Cairo',
  'Africa/Casablanca',
  'Australia/Sydney',
  'Australia/Adelaide',
  'Australia/Lord_Howe',
  'Pacific/Auckland',
  'Pacific/Chatham',
  'Pacific/Easter',
  'Antarctica/Troll',
];
const FIXED_ZONES = [
  'UTC',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'Asia/Tokyo',
  'America/Phoenix',
  'America/Mexico_City',
];
const ZONES = [...DST_ZONES, ...FIXED_ZONES];

const DAY = 86_400_000;
const FIRST_DAY = Date.UTC(2026, 0, 1);
const LAST_DAY = Date.UTC(2030, 11, 31);
/** Query span: every instant of every local day of 2026-2030 in any zone. */
const SPAN_FROM = FIRST_DAY - 2 * DAY;
const SPAN_TO = LAST_DAY + 3 * DAY;

interface Policies {
  dstSkipped: DstSkippedPolicy;
  dstRepeated: DstRepeatedPolicy;
}
const DEFAULTS: Policies = { dstSkipped: 'SHIFT', dstRepeated: 'FIRST' };

interface ZoneInfo {
  transitions: Transition[];
  /** Wall spans [from, to) that do not exist (gaps) or exist twice (overlaps). */
  gaps: [number, number, Transition][];
  overlaps: [number, number, Transition][];
  /** Local dates within a day of a transition: there the oracle resolves by brute force. */
  nearTransition: Set<string>;
}
const infos = new Map<string, ZoneInfo>();
function info(zone: string): ZoneInfo {
  let i = infos.get(zone);
  if (i === undefined) {
    const ts = transitions(
      zone,
      SPAN_FROM - 5 * DAY,
      SPAN_TO + 5 * DAY,
      Number.POSITIVE_INFINITY,
      12 * 3_600_000,
    );
    const gaps = ts
      .filter((t) => t.afterMs > t.beforeMs)
      .map((t): [number, number, Transition] => [t.atMs + t.beforeMs, t.atMs + t.afterMs, t]);
    const overlaps = ts
      .filter((t) => t.afterMs < t.beforeMs)
      .map((t): [number, number, Transition] => [t.atMs + t.afterMs, t.atMs + t.beforeMs, t]);
    const nearTransition = new Set(
      ts.flatMap((t) => [-DAY, 0, DAY].map((d) => dateOf(t.atMs + t.beforeMs + d))),
    );
    i = { transitions: ts, gaps, overlaps, nearTransition };
    infos.set(zone, i);
  }
  return i;
}

type Row = [utc: string, localWall: string, dst: Occurrence['dst']];

/** The policies restated over the oracle: what the library must return for these wall times. */
function oracle(zone: string, walls: number[], p: Policies, fromMs: number, toMs: number) {
  const z = info(zone);
  const byInstant = new Map<number, { wall: number; dst: Occurrence['dst'] }>();
  const skipped: [string, number][] = [];
  const add = (atMs: number, wall: number, dst: Occurrence['dst']) => {
    if (atMs <= fromMs || atMs > toMs) return;
    const seen = byInstant.get(atMs);
    if (seen === undefined || (seen.dst === 'SHIFTED' && dst !== 'SHIFTED'))
      byInstant.set(atMs, { wall, dst });
  };
  for (const wall of walls) {
    let instants: number[];
    if (z.nearTransition.has(dateOf(wall))) instants = instantsOf(zone, wall);
    // Away from transitions the offset is the same all around the wall time.
    else instants = [wall - offsetAt(zone, wall)];
    if (instants.length === 0) {
      const gap = z.gaps.find(([a, b]) => a <= wall && wall < b);
      if (gap === undefined) throw new Error(`oracle: ${isoWall(wall)} in ${zone} has no instant and no gap`);
      if (p.dstSkipped === 'SHIFT') add(gap[2].atMs, wall, 'SHIFTED');
      else if (gap[2].atMs > fromMs && gap[2].atMs <= toMs) skipped.push([isoWall(wall), gap[2].atMs]);
    } else if (instants.length === 1) add(instants[0]!, wall, 'NONE');
    else {
      if (p.dstRepeated !== 'LAST') add(instants[0]!, wall, 'REPEATED_FIRST');
      if (p.dstRepeated !== 'FIRST') add(instants[1]!, wall, 'REPEATED_SECOND');
    }
  }
  const rows: Row[] = [...byInstant.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([at, o]) => [new Date(at).toISOString(), isoWall(o.wall), o.dst]);
  skipped.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
  return { rows, skipped: skipped.map(([w, at]): [string, string] => [w, new Date(at).toISOString()]) };
}

const rowsOf = (os: Occurrence[]): Row[] =>
  os.map((o) => [new Date(o.atMs).toISOString(), o.localWall, o.dst]);

/**
 * What holds for every occurrence whatever the policy. Collects problems and asserts once: an
 * `expect` per occurrence costs more than the rest of the test.
 */
function checkEach(zone: string, os: Occurrence[]): void {
  const problems: string[] = [];
  const near = info(zone).nearTransition;
  os.forEach((o, i) => {
    if (i > 0 && o.atMs <= os[i - 1]!.atMs) problems.push(`${o.local}: not after the previous occurrence`);
    // `local` names the instant, with the zone's wall clock there (checked where it can change).
    if (Date.parse(o.local) !== o.atMs) problems.push(`${o.local}: is not ${new Date(o.atMs).toISOString()}`);
    if (
      (near.has(o.local.slice(0, 10)) || i % 50 === 0) &&
      o.local.slice(0, 19) !== isoWall(wallAt(zone, o.atMs))
    ) {
      problems.push(`${o.local}: the zone's clock reads ${isoWall(wallAt(zone, o.atMs))}`);
    }
    if (o.dst === 'SHIFTED') {
      // The first instant after the gap: the clock jumps over the matched wall time right there.
      const wall = Date.parse(`${o.localWall}Z`);
      if (!(wallAt(zone, o.atMs - 1) < wall && wallAt(zone, o.atMs) > wall))
        problems.push(`${o.local}: not where the clock jumps over ${o.localWall}`);
    }
  });
  expect(problems).toEqual([]);
}

function dailyCase(zone: string, secondOfDay: number, p: Policies): void {
  const s = secondOfDay % 60;
  const m = Math.floor(secondOfDay / 60) % 60;
  const h = Math.floor(secondOfDay / 3600);
  const cron = s === 0 ? `${m} ${h} * * *` : `${s} ${m} ${h} * * *`;
  const rec = compileRecurrence({
    cron,
    intervalMs: null,
    timeZone: zone,
    startAtMs: null,
    endAtMs: null,
    ...p,
  });
  const page = rec.between(SPAN_FROM, SPAN_TO, 10_000);
  const inYears = (wall: string) => wall >= '2026-01-01' && wall < '2031-01-01';
  const os = page.occurrences.filter((o) => inYears(o.localWall));
  const skipped = page.skipped.filter((x) => inYears(x.localWall));
  const walls: number[] = [];
  for (let d = FIRST_DAY; d <= LAST_DAY; d += DAY) walls.push(d + secondOfDay * 1000);
  const expected = oracle(zone, walls, p, SPAN_FROM, SPAN_TO);

  expect(rowsOf(os)).toEqual(expected.rows);
  expect(skipped.map((x) => [x.localWall, new Date(x.atMs).toISOString()])).toEqual(expected.skipped);
  checkEach(zone, os);

  const z = info(zone);
  const gapDays = z.gaps
    .filter(([a, b]) => walls.some((w) => w >= a && w < b))
    .map(([a, b]) => walls.find((w) => w >= a && w < b)!);
  const overlapDays = z.overlaps
    .filter(([a, b]) => walls.some((w) => w >= a && w < b))
    .map(([a, b]) => walls.find((w) => w >= a && w < b)!);
  const at = (w: number) => {
    const wall = isoWall(w);
    return os.filter((o) => o.localWall === wall);
  };
  for (const w of gapDays) {
    const [, b, t] = z.gaps.find(([x, y]) => w >= x && w < y)!;
    if (p.dstSkipped === 'SHIFT') {
      // Shifted to the gap's end: the first valid local time after it.
      expect(at(w).map((o) => [o.dst, o.atMs, o.local.slice(0, 19)])).toEqual([
        ['SHIFTED', t.atMs, isoWall(b)],
      ]);
    } else {
      expect(at(w)).toEqual([]);
      expect(skipped.filter((x) => x.localWall === isoWall(w))).toEqual([
        { localWall: isoWall(w), reason: 'DST_SKIPPED', atMs: t.atMs },
      ]);
    }
  }
  for (const w of overlapDays) {
    const dsts = at(w).map((o) => o.dst);
    if (p.dstRepeated === 'BOTH') expect(dsts).toEqual(['REPEATED_FIRST', 'REPEATED_SECOND']);
    else expect(dsts).toEqual([p.dstRepeated === 'FIRST' ? 'REPEATED_FIRST' : 'REPEATED_SECOND']);
  }

  if (p.dstSkipped === 'SHIFT') {
    // Exactly one occurrence per local calendar day (of the matched wall time) ...
    const perDay = new Map<string, number>();
    for (const o of os) perDay.set(o.localWall.slice(0, 10), (perDay.get(o.localWall.slice(0, 10)) ?? 0) + 1);
    const repeatedDays = p.dstRepeated === 'BOTH' ? overlapDays.length : 0;
    expect(perDay.size).toBe(walls.length);
    expect(os.length).toBe(walls.length + repeatedDays);
    if (p.dstRepeated !== 'BOTH') {
      // ... and exactly one fire per local day of the fire instant, except where a gap ends at
      // midnight (America/Nuuk): a wall time shifted out of it fires at 00:00 on the next day.
      const crossing = os.filter((o) => o.local.slice(0, 10) !== o.localWall.slice(0, 10));
      expect(crossing.filter((o) => o.dst !== 'SHIFTED' || o.local.slice(11, 19) !== '00:00:00')).toEqual([]);
      const fireDays = new Map<string, number>();
      for (const o of os) fireDays.set(o.local.slice(0, 10), (fireDays.get(o.local.slice(0, 10)) ?? 0) + 1);
      const explained = new Set(crossing.flatMap((o) => [o.localWall.slice(0, 10), o.local.slice(0, 10)]));
      expect([...fireDays].filter(([date, n]) => n !== 1 && !explained.has(date))).toEqual([]);
    }
  }
}

describe('daily schedules over 2026-2030', () => {
  it('every zone, at a wall time inside its gap and inside its overlap, default policies', () => {
    for (const zone of ZONES) {
      const z = info(zone);
      if (DST_ZONES.includes(zone)) expect(z.gaps.length, zone).toBeGreaterThanOrEqual(4);
      const times = [...z.gaps.slice(0, 1), ...z.overlaps.slice(0, 1)].map(
        ([a, b]) => Math.floor((((a + b) / 2) % DAY) / 60_000) * 60,
      );
      for (const secondOfDay of times.length > 0 ? times : [2.5 * 3600])
        dailyCase(zone, secondOfDay, DEFAULTS);
    }
  });

  it('random zones, times (in gaps, in overlaps, anywhere) and policies', () => {
    const arb = fc.constantFrom(...ZONES).chain((zone) => {
      const z = info(zone);
      const inSpans = (spans: [number, number, Transition][]) =>
        fc
          .constantFrom(...spans)
          .chain(([a, b]) =>
            fc.integer({ min: a, max: b - 1 }).map((w) => Math.floor((((w % DAY) + DAY) % DAY) / 1000)),
          );
      const anywhere = fc.oneof(
        fc.integer({ min: 0, max: 1439 }).map((m) => m * 60),
        fc.integer({ min: 0, max: 86_399 }),
      );
      const times = [
        anywhere,
        ...(z.gaps.length > 0 ? [inSpans(z.gaps)] : []),
        ...(z.overlaps.length > 0 ? [inSpans(z.overlaps)] : []),
      ];
      return fc.record({
        zone: fc.constant(zone),
        secondOfDay: fc.oneof(...times),
        dstSkipped: fc.constantFrom<DstSkippedPolicy>('SHIFT', 'SKIP'),
        dstRepeated: fc.constantFrom<DstRepeatedPolicy>('FIRST', 'LAST', 'BOTH'),
      });
    });
    fc.assert(
      fc.property(arb, ({ zone, secondOfDay, dstSkipped, dstRepeated }) =>
        dailyCase(zone, secondOfDay, { dstSkipped, dstRepeated }),
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });
});

describe('sub-hourly schedules across transitions', () => {
  it('every N minutes: FIRST never repeats a wall time, BOTH fires both passes, SHIFT never doubles an instant', () => {
    const arb = fc.constantFrom(...DST_ZONES).chain((zone) =>
      fc.record({
        zone: fc.constant(zone),
        transition: fc.constantFrom(...info(zone).transitions),
        stepMinutes: fc.constantFrom(1, 5, 10, 15, 20, 30),
        dstSkipped: fc.constantFrom<DstSkippedPolicy>('SHIFT', 'SKIP'),
        dstRepeated: fc.constantFrom<DstRepeatedPolicy>('FIRST', 'LAST', 'BOTH'),
      }),
    );
    fc.assert(
      fc.property(arb, ({ zone, transition: t, stepMinutes, ...p }) => {
        const rec = compileRecurrence({
          cron: `*/${stepMinutes} * * * *`,
          intervalMs: null,
          timeZone: zone,
          startAtMs: null,
          endAtMs: null,
          ...p,
        });
        const fromMs = t.atMs - 4 * 3_600_000;
        const toMs = t.atMs + 4 * 3_600_000;
        const page = rec.between(fromMs, toMs, 10_000);
        const step = stepMinutes * 60_000;
        const walls: number[] = [];
        for (
          let w = Math.ceil((fromMs - 20 * 3_600_000) / step) * step;
          w <= toMs + 20 * 3_600_000;
          w += step
        ) {
          if (new Date(w).getUTCMinutes() % stepMinutes === 0) walls.push(w);
        }
        const expected = oracle(zone, walls, p, fromMs, toMs);
        expect(rowsOf(page.occurrences)).toEqual(expected.rows);
        expect(page.skipped.map((x) => [x.localWall, new Date(x.atMs).toISOString()])).toEqual(
          expected.skipped,
        );
        checkEach(zone, page.occurrences);
        const wallsSeen = page.occurrences.map((o) => o.localWall);
        const repeatedWalls = wallsSeen.filter((w, i) => wallsSeen.indexOf(w) !== i);
        if (p.dstRepeated !== 'BOTH') expect(repeatedWalls).toEqual([]);
        else if (t.afterMs < t.beforeMs) {
          // Every wall time of the overlap on the step grid fires on both passes.
          const overlapWalls = walls
            .filter((w) => w >= t.atMs + t.afterMs && w < t.atMs + t.beforeMs)
            .map(isoWall);
          expect(repeatedWalls).toEqual(overlapWalls);
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
