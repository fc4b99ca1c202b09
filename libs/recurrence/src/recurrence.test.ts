import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { transitions } from './dst-oracle';
import {
  compileRecurrence,
  type DstRepeatedPolicy,
  type DstSkippedPolicy,
  type Occurrence,
  MAX_SKIPPED_PER_PAGE,
  preview,
  RecurrenceError,
  type Recurrence,
  type RecurrenceSpec,
} from './index';

const H = 3_600_000;
const spec = (over: Partial<RecurrenceSpec>): RecurrenceSpec => ({
  cron: null,
  intervalMs: null,
  timeZone: 'UTC',
  startAtMs: null,
  endAtMs: null,
  ...over,
});
const errorOf = (f: () => unknown): RecurrenceError => {
  try {
    f();
  } catch (err) {
    if (err instanceof RecurrenceError) return err;
    throw err;
  }
  throw new Error('expected a RecurrenceError');
};
const iso = (ms: number) => new Date(ms).toISOString();
const instants = (rec: Recurrence, after: number, n: number) =>
  rec.next(after, n).occurrences.map((o) => iso(o.atMs));

describe('compileRecurrence rejects bad input with a code and a reason', () => {
  const cases: [string, RecurrenceSpec, string, RegExp][] = [
    ['invalid cron', spec({ cron: '61 * * * *' }), 'SCHED_E_INVALID_CRON', /invalid cron/],
    ['cron that never fires', spec({ cron: '0 0 30 2 *' }), 'SCHED_E_INVALID_CRON', /invalid cron/],
    [
      'unknown zone',
      spec({ cron: '* * * * *', timeZone: 'Mars/Olympus_Mons' }),
      'SCHED_E_UNKNOWN_ZONE',
      /IANA name/,
    ],
    ['fixed offset', spec({ cron: '* * * * *', timeZone: '+02:00' }), 'SCHED_E_UNKNOWN_ZONE', /Etc\/GMT-2/],
    ['empty zone', spec({ cron: '* * * * *', timeZone: '' }), 'SCHED_E_UNKNOWN_ZONE', /unknown time zone/],
    [
      'end before start',
      spec({ cron: '* * * * *', startAtMs: 2000, endAtMs: 1000 }),
      'SCHED_E_END_BEFORE_START',
      /must be after/,
    ],
    [
      'end at start',
      spec({ cron: '* * * * *', startAtMs: 1000, endAtMs: 1000 }),
      'SCHED_E_END_BEFORE_START',
      /must be after/,
    ],
    ['interval of zero', spec({ intervalMs: 0 }), 'SCHED_E_INVALID_INTERVAL', />= 1000/],
    ['negative interval', spec({ intervalMs: -60_000 }), 'SCHED_E_INVALID_INTERVAL', />= 1000/],
    ['fractional interval', spec({ intervalMs: 1500.5 }), 'SCHED_E_INVALID_INTERVAL', /whole number/],
    ['sub-second interval', spec({ intervalMs: 999 }), 'SCHED_E_INVALID_INTERVAL', />= 1000/],
    [
      'both cron and interval',
      spec({ cron: '* * * * *', intervalMs: 60_000 }),
      'SCHED_E_INVALID_RECURRENCE',
      /exactly one/,
    ],
    ['neither', spec({}), 'SCHED_E_INVALID_RECURRENCE', /exactly one/],
    [
      'bad policy',
      spec({ cron: '* * * * *', dstSkipped: 'LATER' as never }),
      'SCHED_E_INVALID_RECURRENCE',
      /dstSkipped/,
    ],
    [
      'bad repeated policy',
      spec({ cron: '* * * * *', dstRepeated: 'first' as never }),
      'SCHED_E_INVALID_RECURRENCE',
      /dstRepeated/,
    ],
    [
      'start in seconds as float',
      spec({ cron: '* * * * *', startAtMs: 1.5 }),
      'SCHED_E_INVALID_RECURRENCE',
      /startAtMs/,
    ],
    ['negative end', spec({ cron: '* * * * *', endAtMs: -1 }), 'SCHED_E_INVALID_RECURRENCE', /endAtMs/],
  ];
  it.each(cases)('%s', (_name, s, code, message) => {
    const err = errorOf(() => compileRecurrence(s));
    expect(err.code).toBe(code);
    expect(err.retriable).toBe(false);
    expect(err.message).toMatch(message);
  });

  it('accepts IANA names including UTC and Etc/*, and applies the default policies', () => {
    for (const timeZone of [
      'UTC',
      'Etc/UTC',
      'Etc/GMT-2',
      'Asia/Kolkata',
      'America/Argentina/Buenos_Aires',
    ]) {
      expect(compileRecurrence(spec({ cron: '0 9 * * *', timeZone })).spec.timeZone).toBe(timeZone);
    }
    const s = compileRecurrence(spec({ cron: ' 0 9 * * * ', timeZone: 'Europe/Paris' })).spec;
    expect(s).toMatchObject({ cron: '0 9 * * *', dstSkipped: 'SHIFT', dstRepeated: 'FIRST' });
    expect(Object.isFrozen(s)).toBe(true);
  });
});

describe('next and between', () => {
  const hourly = compileRecurrence(spec({ cron: '0 * * * *' }));
  const t0 = Date.UTC(2026, 0, 1);

  it('next: strictly after, in order, at most limit', () => {
    expect(instants(hourly, t0, 3)).toEqual([
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T02:00:00.000Z',
      '2026-01-01T03:00:00.000Z',
    ]);
    expect(instants(hourly, t0 - 1, 1)).toEqual(['2026-01-01T00:00:00.000Z']);
    const page = hourly.next(t0, 3);
    expect(page.coveredUntilMs).toBe(t0 + 3 * H);
    expect(page.exhausted).toBe(false);
    expect(hourly.next(t0, 0)).toEqual({
      occurrences: [],
      skipped: [],
      coveredUntilMs: t0,
      exhausted: false,
    });
  });

  it('respects start (inclusive) and end (inclusive), and says when exhausted', () => {
    const rec = compileRecurrence(spec({ cron: '0 * * * *', startAtMs: t0 + 2 * H, endAtMs: t0 + 4 * H }));
    expect(instants(rec, 0, 10)).toEqual([
      '2026-01-01T02:00:00.000Z',
      '2026-01-01T03:00:00.000Z',
      '2026-01-01T04:00:00.000Z',
    ]);
    const page = rec.next(0, 10);
    expect(page).toMatchObject({ coveredUntilMs: t0 + 4 * H, exhausted: true });
    expect(rec.next(t0 + 4 * H, 10)).toMatchObject({ occurrences: [], exhausted: true });
  });

  it('between: fromMs < atMs <= toMs, truncated iff more than maxCount', () => {
    const all = hourly.between(t0, t0 + 5 * H, 100);
    expect(all.occurrences.map((o) => o.atMs)).toEqual([1, 2, 3, 4, 5].map((k) => t0 + k * H));
    expect(all).toMatchObject({ truncated: false, coveredUntilMs: t0 + 5 * H });
    expect(hourly.between(t0, t0 + 5 * H, 5).truncated).toBe(false);
    const cut = hourly.between(t0, t0 + 5 * H, 2);
    expect(cut).toMatchObject({ truncated: true, coveredUntilMs: t0 + 2 * H });
    expect(cut.occurrences).toHaveLength(2);
    expect(hourly.between(t0, t0 + 5 * H, 0)).toMatchObject({
      occurrences: [],
      truncated: true,
      coveredUntilMs: t0,
    });
    expect(hourly.between(t0, t0, 10)).toMatchObject({ occurrences: [], truncated: false });
  });

  it('pages add up to one long query', () => {
    const rec = compileRecurrence(
      spec({ cron: '*/15 * * * *', timeZone: 'America/New_York', dstRepeated: 'BOTH', dstSkipped: 'SKIP' }),
    );
    const from = Date.UTC(2026, 2, 7);
    const to = Date.UTC(2026, 10, 3);
    const whole = rec.between(from, to, 100_000);
    const paged: number[] = [];
    const skipped: string[] = [];
    for (let after = from; ;) {
      const page = rec.next(after, 37);
      const inSpan = page.occurrences.filter((o) => o.atMs <= to);
      paged.push(...inSpan.map((o) => o.atMs));
      skipped.push(...page.skipped.filter((s) => s.atMs <= to).map((s) => s.localWall));
      if (page.coveredUntilMs >= to) break;
      after = page.coveredUntilMs;
    }
    expect(paged).toEqual(whole.occurrences.map((o) => o.atMs));
    expect(skipped).toEqual(whole.skipped.map((s) => s.localWall));
    expect(skipped).toEqual([
      '2026-03-08T02:00:00',
      '2026-03-08T02:15:00',
      '2026-03-08T02:30:00',
      '2026-03-08T02:45:00',
    ]);
  });

  it('next: a rule that only matches gap wall times under SKIP is cut short by MAX_SKIPPED_PER_PAGE', () => {
    // Every second of 02:xx on the second Sunday of March: US DST starts then, every year.
    const rec = compileRecurrence(
      spec({ cron: '* * 2 * 3 0#2', timeZone: 'America/New_York', dstSkipped: 'SKIP' }),
    );
    const page = rec.next(Date.UTC(2026, 0, 1), 5);
    expect(page.occurrences).toEqual([]);
    expect(page.exhausted).toBe(false);
    // 3,600 skipped wall times a year, all at that year's gap instant: the cap is passed in the third
    // year, whose records stay together.
    expect(MAX_SKIPPED_PER_PAGE).toBe(10_000);
    expect(page.skipped).toHaveLength(3 * 3600);
    const gaps = [Date.UTC(2026, 2, 8, 7), Date.UTC(2027, 2, 14, 7), Date.UTC(2028, 2, 12, 7)];
    expect([...new Set(page.skipped.map((s) => s.atMs))]).toEqual(gaps);
    expect(page.skipped[0]).toEqual({
      localWall: '2026-03-08T02:00:00',
      reason: 'DST_SKIPPED',
      atMs: gaps[0],
    });
    expect(page.coveredUntilMs).toBe(gaps[2]);
    expect(rec.next(page.coveredUntilMs, 5).skipped[0]!.localWall).toBe('2029-03-11T02:00:00');
  });

  it('rejects bad arguments with SCHED_E_INVALID_ARGUMENT', () => {
    for (const f of [
      () => hourly.next(1.5, 1),
      () => hourly.next(Number.NaN, 1),
      () => hourly.next(0, -1),
      () => hourly.next(0, 1_000_001),
      () => hourly.between(10, 5, 1),
      () => hourly.between(0, 10, 0.5),
    ]) {
      expect(errorOf(f).code).toBe('SCHED_E_INVALID_ARGUMENT');
    }
  });
});

describe('intervals', () => {
  it('fire at startAtMs + k·intervalMs in absolute time, DST-agnostic', () => {
    const start = Date.UTC(2026, 2, 8, 5, 0, 0, 250);
    const rec = compileRecurrence(spec({ intervalMs: H, startAtMs: start, timeZone: 'America/New_York' }));
    const page = rec.next(start - 1, 4);
    expect(page.occurrences.map((o) => o.atMs)).toEqual([0, 1, 2, 3].map((k) => start + k * H));
    expect(page.occurrences.map((o) => o.local)).toEqual([
      '2026-03-08T00:00:00.250-05:00',
      '2026-03-08T01:00:00.250-05:00',
      '2026-03-08T03:00:00.250-04:00',
      '2026-03-08T04:00:00.250-04:00',
    ]);
    expect(page.occurrences.every((o) => o.dst === 'NONE')).toBe(true);
    expect(rec.next(start, 1).occurrences[0]!.atMs).toBe(start + H);
    expect(rec.next(start + H - 1, 1).occurrences[0]!.atMs).toBe(start + H);
    expect(rec.next(0, 1).occurrences[0]!.atMs).toBe(start);
  });

  it('anchor at the epoch without a start, stop at the end', () => {
    const rec = compileRecurrence(spec({ intervalMs: 7 * 60_000, endAtMs: 7 * 60_000 * 1000 }));
    expect(rec.next(1000, 2).occurrences.map((o) => o.atMs)).toEqual([7 * 60_000, 14 * 60_000]);
    expect(rec.next(-5, 1).occurrences[0]!.atMs).toBe(0);
    const tail = rec.next(7 * 60_000 * 998, 10);
    expect(tail.occurrences.map((o) => o.atMs)).toEqual([7 * 60_000 * 999, 7 * 60_000 * 1000]);
    expect(tail.exhausted).toBe(true);
  });
});

describe('preview', () => {
  it('lists the next fire times in UTC and local time', () => {
    const lines = preview(
      spec({ cron: '30 2 * * *', timeZone: 'America/New_York', endAtMs: Date.UTC(2026, 2, 10) }),
      Date.UTC(2026, 2, 7),
      5,
    );
    expect(lines).toEqual([
      {
        utc: '2026-03-07T07:30:00.000Z',
        local: '2026-03-07T02:30:00-05:00',
        localWall: '2026-03-07T02:30:00',
        dst: 'NONE',
      },
      {
        utc: '2026-03-08T07:00:00.000Z',
        local: '2026-03-08T03:00:00-04:00',
        localWall: '2026-03-08T02:30:00',
        dst: 'SHIFTED',
      },
      {
        utc: '2026-03-09T06:30:00.000Z',
        local: '2026-03-09T02:30:00-04:00',
        localWall: '2026-03-09T02:30:00',
        dst: 'NONE',
      },
    ]);
    expect(errorOf(() => preview(spec({ cron: 'nope' }), 0, 1)).code).toBe('SCHED_E_INVALID_CRON');
  });
});

describe('paging (property)', () => {
  /*
   * The walk's start and stop bounds come from the zone's offsets; paging with small limits around
   * transitions, in zones from UTC-12 to UTC+14, exercises them. RECURRENCE_PAGING_RUNS (default 40),
   * RECURRENCE_PAGING_SEED.
   */
  const RUNS = Number(process.env.RECURRENCE_PAGING_RUNS ?? 40);
  const SEED =
    process.env.RECURRENCE_PAGING_SEED === undefined ? undefined : Number(process.env.RECURRENCE_PAGING_SEED);
  const DAY = 86_400_000;

  it('next() page by page returns exactly what one between() returns, skipped times included', () => {
    const arb = fc.record({
      zone: fc.constantFrom(
        'America/New_York',
        'America/Santiago',
        'America/Nuuk',
        'Europe/London',
        'Australia/Lord_Howe',
        'Pacific/Chatham',
        'Antarctica/Troll',
        'Pacific/Kiritimati',
        'Pacific/Apia',
        'Pacific/Pago_Pago',
        'Etc/GMT+12',
        'Etc/GMT-14',
      ),
      cron: fc.constantFrom(
        '*/15 * * * *',
        '0 */3 * * *',
        '30 2 * * *',
        '0 0 * * 0',
        '*/7 1-3 * * *',
        '59 59 23 * * *',
        '0 30 0-3 * * 1-5',
      ),
      fromMs: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2030, 0, 1) }),
      limit: fc.integer({ min: 1, max: 5 }),
      dstSkipped: fc.constantFrom<DstSkippedPolicy>('SHIFT', 'SKIP'),
      dstRepeated: fc.constantFrom<DstRepeatedPolicy>('FIRST', 'LAST', 'BOTH'),
    });
    fc.assert(
      fc.property(arb, ({ zone, cron, fromMs, limit, ...p }) => {
        const rec = compileRecurrence(spec({ cron, timeZone: zone, ...p }));
        // Around the zone's next transition, if it has one.
        const t = transitions(zone, fromMs, fromMs + 400 * DAY, 1, 12 * H)[0];
        const from = t === undefined ? fromMs : t.atMs - 3 * DAY;
        const to = from + 6 * DAY;
        const whole = rec.between(from, to, 100_000);
        const occurrences: Occurrence[] = [];
        const skipped: string[] = [];
        for (let after = from; after < to;) {
          const page = rec.next(after, limit);
          occurrences.push(...page.occurrences.filter((o) => o.atMs <= to));
          skipped.push(...page.skipped.filter((x) => x.atMs <= to).map((x) => x.localWall));
          expect(page.coveredUntilMs).toBeGreaterThan(after);
          after = page.coveredUntilMs;
        }
        expect(occurrences).toEqual(whole.occurrences);
        expect(skipped).toEqual(whole.skipped.map((x) => x.localWall));
        // Each occurrence is also what next() returns just before it.
        for (const o of whole.occurrences.slice(0, 20))
          expect(rec.next(o.atMs - 1, 1).occurrences[0]).toEqual(o);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
