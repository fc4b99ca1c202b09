/**
 * Naive wall-clock time. A "wall ms" encodes a local date and time of day as if it were UTC:
 * 2026-03-08T02:30:00 local is `Date.UTC(2026, 2, 8, 2, 30)` whatever the zone. Wall ms form a
 * timeline without gaps or repeats, which is where cron rules are evaluated; a zone then maps each
 * wall time to 0, 1 or 2 real instants (`zone-timeline.ts`).
 */

export const MS_PER_DAY = 86_400_000;

/**
 * Latest instant the library generates, exclusive: 9999-01-01T00:00:00Z. Walls stay within four-digit
 * years for every offset, so ISO strings keep their fixed width.
 */
export const MAX_INSTANT_MS = Date.UTC(9999, 0, 1);

const CUMULATIVE_DAYS = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Days in `month` (1-12) of `year` (proleptic Gregorian). */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a civil date (month 1-12, day 1-31). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const leapDays = (y: number) => Math.floor(y / 4) - Math.floor(y / 100) + Math.floor(y / 400);
  const dayOfYear = CUMULATIVE_DAYS[month - 1]! + day - 1 + (month > 2 && isLeapYear(year) ? 1 : 0);
  return (year - 1970) * 365 + leapDays(year - 1) - leapDays(1969) + dayOfYear;
}

/** The civil date of a day number (days since 1970-01-01). */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const packed = packedCivil(days);
  return { year: Math.floor(packed / 10_000), month: Math.floor(packed / 100) % 100, day: packed % 100 };
}

/**
 * year·10000 + month·100 + day of a day number, allocation-free (H. Hinnant's `civil_from_days`;
 * `new Date(…).toISOString()` costs ~1 µs, which showed in profiles of a year of hourly occurrences).
 */
function packedCivil(days: number): number {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  return year * 10_000 + month * 100 + day;
}

/** Day of week of a day number: 0 = Sunday … 6 = Saturday (1970-01-01 was a Thursday). */
export function dayOfWeek(days: number): number {
  return (((days + 4) % 7) + 7) % 7;
}

const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));

/** `YYYY-MM-DDTHH:mm:ss`, plus `.SSS` only when the milliseconds are not zero. Years 1000-9999. */
export function formatWall(wallMs: number): string {
  const days = Math.floor(wallMs / MS_PER_DAY);
  const packed = packedCivil(days);
  let rest = wallMs - days * MS_PER_DAY;
  const ms = rest % 1000;
  rest = (rest - ms) / 1000;
  const s = rest % 60;
  rest = (rest - s) / 60;
  const m = rest % 60;
  const h = (rest - m) / 60;
  const text =
    `${Math.floor(packed / 10_000)}-${TWO_DIGITS[Math.floor(packed / 100) % 100]}-${TWO_DIGITS[packed % 100]}` +
    `T${TWO_DIGITS[h]}:${TWO_DIGITS[m]}:${TWO_DIGITS[s]}`;
  return ms === 0 ? text : `${text}.${String(ms).padStart(3, '0')}`;
}

/** `+HH:MM` (or `+HH:MM:SS` for the odd historical offset with seconds); UTC is `+00:00`. */
export function formatOffset(offsetMs: number): string {
  const abs = Math.abs(offsetMs);
  const h = Math.floor(abs / 3_600_000);
  const m = Math.floor((abs % 3_600_000) / 60_000);
  const s = Math.floor((abs % 60_000) / 1000);
  const hhmm = `${offsetMs < 0 ? '-' : '+'}${TWO_DIGITS[h]}:${TWO_DIGITS[m]}`;
  return s === 0 ? hhmm : `${hhmm}:${TWO_DIGITS[s]}`;
}

/** ISO 8601 local time with offset of instant `atMs` in a zone whose offset there is `offsetMs`. */
export function formatLocal(atMs: number, offsetMs: number): string {
  return formatWall(atMs + offsetMs) + formatOffset(offsetMs);
}
