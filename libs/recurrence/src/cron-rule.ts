import { CronExpressionParser, type CronFieldCollection } from 'cron-parser';
import { RecurrenceError, RecurrenceErrorCode } from './recurrence-error';
import { civilFromDays, dayOfWeek, daysFromCivil, daysInMonth } from './wall-clock';

/** The Gregorian calendar repeats every 400 years, which is exactly 146,097 days (20,871 weeks). */
const GREGORIAN_CYCLE_DAYS = 146_097;
const SECONDS_PER_DAY = 86_400;

/** cron-parser's predefined expressions (its table is not exported); matched exactly, as it does. */
const PREDEFINED = new Set([
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@hourly',
  '@minutely',
  '@secondly',
  '@weekdays',
  '@weekends',
]);

/** Month and weekday names, removed before looking for the `H` (hash) character. */
const NAMES = /\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat)\b/gi;

/**
 * A cron rule compiled for fast evaluation on the naive wall-clock timeline (see `wall-clock.ts`).
 *
 * cron-parser parses and validates the expression; its parsed fields are then turned into lookup
 * tables, because its own iterator costs ~30 µs per step (a year of hourly times would take 0.3 s)
 * against well under 1 µs here. The matching rules are cron-parser's, including its day rules: when
 * both day-of-month and day-of-week are restricted a day matches either (Vixie cron), `L` in
 * day-of-month is the last day, `5L` the last Friday, `1#2` the second Monday. `cron-rule.test.ts`
 * checks the two agree on random expressions.
 *
 * Immutable after construction; safe to share.
 */
export class CronRule {
  private readonly nextSecond = new Int8Array(61).fill(-1);
  private readonly nextMinute = new Int8Array(61).fill(-1);
  private readonly nextHour = new Int8Array(25).fill(-1);
  private readonly monthOk = new Uint8Array(13);
  private readonly dayOfMonthOk = new Uint8Array(32);
  private readonly dayOfWeekOk = new Uint8Array(7);
  /** Weekdays of `5L`-style terms (cron-parser also counts plain weekdays here, when an L is present). */
  private readonly lastWeekdayOk = new Uint8Array(7);
  private readonly lastDayOfMonth: boolean;
  private readonly lastWeekday: boolean;
  /** `#n` of day-of-week, 0 when absent. */
  private readonly nthWeekday: number;
  private readonly dayOfMonthWildcard: boolean;
  private readonly dayOfWeekWildcard: boolean;
  private readonly firstSecond: number;
  private readonly firstMinute: number;

  constructor(fields: CronFieldCollection) {
    fillNext(this.nextSecond, fields.second.values);
    fillNext(this.nextMinute, fields.minute.values);
    fillNext(this.nextHour, fields.hour.values);
    for (const m of fields.month.values) this.monthOk[m] = 1;
    for (const d of fields.dayOfMonth.values) if (typeof d === 'number') this.dayOfMonthOk[d] = 1;
    for (const w of fields.dayOfWeek.values) if (typeof w === 'number') this.dayOfWeekOk[w % 7] = 1;
    this.lastDayOfMonth = fields.dayOfMonth.hasLastChar;
    this.lastWeekday = fields.dayOfWeek.hasLastChar;
    if (this.lastWeekday) {
      for (const w of fields.dayOfWeek.values) {
        const day = parseInt(String(w).charAt(0), 10);
        if (!Number.isNaN(day)) this.lastWeekdayOk[day % 7] = 1;
      }
    }
    this.nthWeekday = fields.dayOfWeek.nthDay;
    this.dayOfMonthWildcard = fields.dayOfMonth.isWildcard;
    this.dayOfWeekWildcard = fields.dayOfWeek.isWildcard;
    this.firstSecond = this.nextSecond[0]!;
    this.firstMinute = this.nextMinute[0]!;
  }

  /**
   * The first wall time strictly after `afterWallMs` that the rule matches (whole seconds), or null
   * when there is none up to day `maxDay` (days since 1970-01-01). Cost: O(days skipped), months
   * not in the rule skipped whole; the compile-time check guarantees a match within any 400 years.
   */
  nextWallAfter(afterWallMs: number, maxDay: number): number | null {
    const second = Math.floor(afterWallMs / 1000) + 1;
    let day = Math.floor(second / SECONDS_PER_DAY);
    const first = this.timeOfDayAtOrAfter(second - day * SECONDS_PER_DAY);
    if (first >= 0 && this.matchesDay(day)) return (day * SECONDS_PER_DAY + first) * 1000;
    day = this.nextMatchingDay(day + 1, maxDay);
    return day < 0 ? null : (day * SECONDS_PER_DAY + this.timeOfDayAtOrAfter(0)) * 1000;
  }

  /** Whether any day in the 400-year cycle matches, i.e. whether the rule ever fires. */
  everFires(): boolean {
    const from = daysFromCivil(2000, 1, 1);
    return this.nextMatchingDay(from, from + GREGORIAN_CYCLE_DAYS) >= 0;
  }

  /** The first day >= `day` and <= `maxDay` the rule matches, or -1. */
  private nextMatchingDay(day: number, maxDay: number): number {
    let { year, month, day: dom } = civilFromDays(day);
    let dow = dayOfWeek(day);
    while (day <= maxDay) {
      if (this.monthOk[month] === 0) {
        // Skip to the first day of the next month the rule allows (some month is always allowed).
        do {
          month = month === 12 ? 1 : month + 1;
          if (month === 1) year++;
        } while (this.monthOk[month] === 0);
        dom = 1;
        day = daysFromCivil(year, month, 1);
        dow = dayOfWeek(day);
        continue;
      }
      const dim = daysInMonth(year, month);
      if (this.dayMatches(dom, dow, dim)) return day;
      day++;
      dow = dow === 6 ? 0 : dow + 1;
      if (dom < dim) dom++;
      else {
        dom = 1;
        month = month === 12 ? 1 : month + 1;
        if (month === 1) year++;
      }
    }
    return -1;
  }

  private matchesDay(day: number): boolean {
    const { year, month, day: dom } = civilFromDays(day);
    return this.monthOk[month] === 1 && this.dayMatches(dom, dayOfWeek(day), daysInMonth(year, month));
  }

  /** cron-parser's day rules (`CronExpression#matchDayOfMonth`), month already matched. */
  private dayMatches(dom: number, dow: number, daysInThisMonth: number): boolean {
    const domMatch = this.dayOfMonthOk[dom] === 1 || (this.lastDayOfMonth && dom === daysInThisMonth);
    const dowMatch =
      (this.dayOfWeekOk[dow] === 1 && (this.nthWeekday <= 0 || Math.ceil(dom / 7) === this.nthWeekday)) ||
      (this.lastWeekday && this.lastWeekdayOk[dow] === 1 && dom > daysInThisMonth - 7);
    if (!this.dayOfMonthWildcard && !this.dayOfWeekWildcard) return domMatch || dowMatch;
    if (this.dayOfWeekWildcard) return domMatch;
    return dowMatch;
  }

  /** The first matching second of the day at or after `secondOfDay`, or -1 when none is left. */
  private timeOfDayAtOrAfter(secondOfDay: number): number {
    const h = Math.floor(secondOfDay / 3600);
    const rest = secondOfDay - h * 3600;
    const m = Math.floor(rest / 60);
    const s = rest - m * 60;
    if (this.nextHour[h] === h) {
      if (this.nextMinute[m] === m) {
        const s2 = this.nextSecond[s]!;
        if (s2 >= 0) return h * 3600 + m * 60 + s2;
      }
      const m2 = this.nextMinute[m + 1]!;
      if (m2 >= 0) return h * 3600 + m2 * 60 + this.firstSecond;
    }
    const h2 = this.nextHour[h + 1]!;
    return h2 >= 0 ? h2 * 3600 + this.firstMinute * 60 + this.firstSecond : -1;
  }
}

/** `next[x]` = the smallest allowed value >= x, or -1. */
function fillNext(next: Int8Array, values: readonly (number | string)[]): void {
  for (const v of values) if (typeof v === 'number') next[v] = v;
  for (let x = next.length - 2; x >= 0; x--) if (next[x] === -1) next[x] = next[x + 1]!;
}

/**
 * Parses and checks a cron expression: 5 fields (minute precision, second 0) or 6 (seconds first),
 * or one of cron-parser's `@daily`-style names. Rejected with SCHED_E_INVALID_CRON: anything
 * cron-parser rejects, other field counts (cron-parser would silently pad them), the `H` hash
 * (cron-parser draws it at random unless seeded: occurrences must not change between compiles; use
 * the schedule's jitter window instead), and rules that can never fire (e.g. 30 February).
 */
export function parseCron(expression: unknown): CronRule {
  const fail = (why: string): never => {
    throw new RecurrenceError(
      RecurrenceErrorCode.InvalidCron,
      `invalid cron ${JSON.stringify(expression)}: ${why}`,
    );
  };
  if (typeof expression !== 'string') return fail('must be a string');
  const text = expression.trim();
  if (text.startsWith('@')) {
    if (!PREDEFINED.has(text)) fail(`unknown name; use one of ${[...PREDEFINED].join(', ')}`);
  } else {
    const count = text === '' ? 0 : text.split(/\s+/).length;
    if (count !== 5 && count !== 6) {
      fail(
        `expected 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), got ${count}`,
      );
    }
  }
  let fields: CronFieldCollection;
  try {
    // currentDate is irrelevant to parsing; passing it keeps cron-parser from reading the clock.
    fields = CronExpressionParser.parse(text, { tz: 'UTC', currentDate: 0 }).fields;
  } catch (err) {
    return fail((err as Error).message);
  }
  // Valid for cron-parser; an H left after removing month and weekday names is its hash.
  if (!text.startsWith('@') && /h/i.test(text.replace(NAMES, ''))) {
    fail(
      'the H (hash) character is not supported: it is drawn at random; write explicit values and use the jitter window',
    );
  }
  const rule = new CronRule(fields);
  if (!rule.everFires()) fail('it matches no day of any year (e.g. 30 February), so it can never fire');
  return rule;
}
