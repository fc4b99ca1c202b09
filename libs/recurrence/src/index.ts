/**
 * @sched/recurrence: occurrences of recurring schedules. Pure: no clock reads, no timers; every
 * function takes the instants it needs. Instants are integer ms since the Unix epoch.
 *
 * Worked example: `30 2 * * *` in America/New_York around the 2026 spring change (clocks jump from
 * 02:00 EST to 03:00 EDT on 8 March, i.e. at 07:00Z):
 *
 *   wall time matched      instants in the zone    default policy (SHIFT)          SKIP
 *   2026-03-07T02:30:00    07:30Z (-05:00)         07:30Z  NONE                    07:30Z
 *   2026-03-08T02:30:00    none (in the gap)       07:00Z  SHIFTED, local 03:00    skipped @07:00Z
 *   2026-03-09T02:30:00    06:30Z (-04:00)         06:30Z  NONE                    06:30Z
 *
 * The cron rule runs on the naive wall clock and each wall time is resolved in the zone for every
 * occurrence (never by adding 24 h to a previous instant or reusing an offset). On 1 November 01:30
 * exists twice (05:30Z EDT, 06:30Z EST): FIRST fires at 05:30Z, LAST at 06:30Z, BOTH at both.
 *
 *   const rec = compileRecurrence({ cron: '30 2 * * *', intervalMs: null, timeZone: 'America/New_York',
 *                                   startAtMs: null, endAtMs: null });   // throws RecurrenceError
 *   rec.next(Date.UTC(2026, 2, 7), 3).occurrences.map((o) => o.local);
 *   // ['2026-03-07T02:30:00-05:00', '2026-03-08T03:00:00-04:00', '2026-03-09T02:30:00-04:00']
 */
export {
  compileRecurrence,
  preview,
  MAX_PAGE_SIZE,
  MAX_SKIPPED_PER_PAGE,
  type PreviewLine,
  type Recurrence,
} from './recurrence';
export {
  DEFAULT_DST_REPEATED,
  DEFAULT_DST_SKIPPED,
  MIN_INTERVAL_MS,
  type DstRepeatedPolicy,
  type DstSkippedPolicy,
  type RecurrenceSpec,
  type ResolvedRecurrenceSpec,
} from './recurrence-spec';
export type { Occurrence, OccurrenceDst, OccurrencePage, SkippedOccurrence } from './occurrence-page';
export { RecurrenceError, RecurrenceErrorCode } from './recurrence-error';
export { jitterOffsetMs, MAX_JITTER_WINDOW_MS } from './jitter';
export { occurrenceId, MAX_SCHEDULE_ID_LENGTH } from './occurrence-id';
export { MAX_INSTANT_MS } from './wall-clock';
