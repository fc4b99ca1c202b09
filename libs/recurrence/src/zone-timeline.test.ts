import fc from 'fast-check';
import { IANAZone } from 'luxon';
import { describe, expect, it } from 'vitest';
import { instantsOf, offsetAt, transitions, wallAt } from './dst-oracle';
import { ZoneTimeline } from './zone-timeline';

/*
 * ZoneTimeline.resolve against a brute-force oracle built on Intl (dst-oracle.ts), at wall times
 * picked around real transitions of random zones (all of ICU's) and years (1970-2099).
 * RECURRENCE_ZONE_RUNS (default 200) and RECURRENCE_ZONE_SEED replay a failure.
 */
const RUNS = Number(process.env.RECURRENCE_ZONE_RUNS ?? 200);
const SEED =
  process.env.RECURRENCE_ZONE_SEED === undefined ? undefined : Number(process.env.RECURRENCE_ZONE_SEED);
const H = 3_600_000;

const resolve = (zone: string, wall: number) => new ZoneTimeline(IANAZone.create(zone)).resolve(wall);

describe('ZoneTimeline.resolve', () => {
  it('America/New_York 2026: 02:30 on 8 March is skipped, 01:30 on 1 November repeated', () => {
    expect(resolve('America/New_York', Date.UTC(2026, 2, 8, 2, 30))).toEqual({
      kind: 'SKIPPED',
      gapAtMs: Date.UTC(2026, 2, 8, 7),
      offsetAfterMs: -4 * H,
    });
    expect(resolve('America/New_York', Date.UTC(2026, 10, 1, 1, 30))).toEqual({
      kind: 'REPEATED',
      firstAtMs: Date.UTC(2026, 10, 1, 5, 30),
      firstOffsetMs: -4 * H,
      secondAtMs: Date.UTC(2026, 10, 1, 6, 30),
      secondOffsetMs: -5 * H,
    });
    expect(resolve('America/New_York', Date.UTC(2026, 10, 1, 2, 0))).toEqual({
      kind: 'UNIQUE',
      atMs: Date.UTC(2026, 10, 1, 7),
      offsetMs: -5 * H,
    });
  });

  it('Australia/Lord_Howe: half-hour shifts', () => {
    // 4 Oct 2026 02:00 +10:30 → 02:30 +11:00.
    expect(resolve('Australia/Lord_Howe', Date.UTC(2026, 9, 4, 2, 15))).toEqual({
      kind: 'SKIPPED',
      gapAtMs: Date.UTC(2026, 9, 3, 15, 30),
      offsetAfterMs: 11 * H,
    });
    // 5 Apr 2026 02:00 +11:00 → 01:30 +10:30.
    const r = resolve('Australia/Lord_Howe', Date.UTC(2026, 3, 5, 1, 45));
    expect(r).toMatchObject({
      kind: 'REPEATED',
      firstAtMs: Date.UTC(2026, 3, 4, 14, 45),
      secondAtMs: Date.UTC(2026, 3, 4, 15, 15),
    });
  });

  it('agrees with the brute-force oracle around real transitions', () => {
    // Mostly zones that have DST now; all of them have had some transition since 1970.
    const dstZones = Intl.supportedValuesOf('timeZone').filter(
      (z) => offsetAt(z, Date.UTC(2026, 0, 1)) !== offsetAt(z, Date.UTC(2026, 6, 1)),
    );
    fc.assert(
      fc.property(
        fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...dstZones) },
          { weight: 1, arbitrary: fc.constantFrom(...Intl.supportedValuesOf('timeZone')) },
        ),
        fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2099, 0, 1) }),
        fc.double({ min: -0.25, max: 1.25, noNaN: true }),
        fc.integer({ min: 0, max: 59 }),
        (zone, fromMs, where, second) => {
          const t = transitions(zone, fromMs, fromMs + 370 * 24 * H, 1)[0];
          // Near the transition's wall span (or anywhere, in a zone without one).
          const base = t === undefined ? fromMs : t.atMs + Math.min(t.beforeMs, t.afterMs);
          const span = t === undefined ? 24 * H : Math.abs(t.afterMs - t.beforeMs);
          const wall = Math.floor((base + where * span) / 60_000) * 60_000 + second * 1000;
          const expected = instantsOf(zone, wall);
          const r = resolve(zone, wall);
          if (expected.length === 0) {
            expect(r.kind).toBe('SKIPPED');
            if (r.kind !== 'SKIPPED') return;
            // The clock jumps over the wall time exactly at gapAtMs.
            expect(wallAt(zone, r.gapAtMs - 1)).toBeLessThan(wall);
            expect(wallAt(zone, r.gapAtMs)).toBeGreaterThan(wall);
            expect(r.offsetAfterMs).toBe(offsetAt(zone, r.gapAtMs));
          } else if (expected.length === 1) {
            expect(r).toEqual({ kind: 'UNIQUE', atMs: expected[0], offsetMs: wall - expected[0]! });
          } else {
            expect(r).toEqual({
              kind: 'REPEATED',
              firstAtMs: expected[0],
              firstOffsetMs: wall - expected[0]!,
              secondAtMs: expected[1],
              secondOffsetMs: wall - expected[1]!,
            });
          }
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('tracks offsets over long spans without remembering them between walls', () => {
    const zone = 'Europe/London';
    const tl = new ZoneTimeline(IANAZone.create(zone));
    for (let t = Date.UTC(2026, 0, 1); t < Date.UTC(2031, 0, 1); t += 7 * H) {
      tl.cover(t, t);
      expect(tl.offsetAt(t)).toBe(offsetAt(zone, t));
    }
  });
});
