import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MS_PER_DAY,
  civilFromDays,
  dayOfWeek,
  daysFromCivil,
  daysInMonth,
  formatLocal,
  formatOffset,
  formatWall,
} from './wall-clock';

const day = fc.integer({ min: -1000, max: daysFromCivil(9999, 1, 1) });

describe('civil date arithmetic', () => {
  it('round-trips with Date.UTC over 1967-9999', () => {
    fc.assert(
      fc.property(day, (d) => {
        const { year, month, day: dom } = civilFromDays(d);
        const date = new Date(d * MS_PER_DAY);
        expect([year, month, dom]).toEqual([
          date.getUTCFullYear(),
          date.getUTCMonth() + 1,
          date.getUTCDate(),
        ]);
        expect(daysFromCivil(year, month, dom)).toBe(d);
        expect(dayOfWeek(d)).toBe(date.getUTCDay());
      }),
      { numRuns: 2000 },
    );
  });

  it('knows month lengths and leap years', () => {
    expect([2024, 2025, 2100, 2000].map((y) => daysInMonth(y, 2))).toEqual([29, 28, 28, 29]);
    expect([1, 4, 6, 9, 11, 12].map((m) => daysInMonth(2026, m))).toEqual([31, 30, 30, 30, 30, 31]);
  });
});

describe('formatting', () => {
  it('formats wall times like toISOString, without zone, ms only when not zero', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1969, 0, 1), max: Date.UTC(9998, 11, 31) }), (ms) => {
        const iso = new Date(ms).toISOString();
        expect(formatWall(ms)).toBe(ms % 1000 === 0 ? iso.slice(0, 19) : iso.slice(0, 23));
      }),
      { numRuns: 2000 },
    );
    expect(formatWall(Date.UTC(2026, 2, 8, 2, 30))).toBe('2026-03-08T02:30:00');
    expect(formatWall(Date.UTC(2026, 2, 8, 2, 30, 0, 5))).toBe('2026-03-08T02:30:00.005');
  });

  it('formats offsets as ±HH:MM (±HH:MM:SS when seconds)', () => {
    expect(formatOffset(0)).toBe('+00:00');
    expect(formatOffset(-4 * 3_600_000)).toBe('-04:00');
    expect(formatOffset(12.75 * 3_600_000)).toBe('+12:45');
    expect(formatOffset(-(44 * 60_000 + 30_000))).toBe('-00:44:30');
    expect(formatLocal(Date.UTC(2026, 2, 8, 7), -4 * 3_600_000)).toBe('2026-03-08T03:00:00-04:00');
  });
});
