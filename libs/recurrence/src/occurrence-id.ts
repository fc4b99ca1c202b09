import { RecurrenceError, RecurrenceErrorCode } from './recurrence-error';
import { MAX_INSTANT_MS } from './wall-clock';

/** Longest schedule id `occurrenceId` takes: 175 + '@' + 24-char ISO instant = 200. */
export const MAX_SCHEDULE_ID_LENGTH = 175;

/** Printable ASCII without space. */
const SCHEDULE_ID = /^[\x21-\x7e]+$/;

/**
 * The id of a schedule's occurrence: `${scheduleId}@${ISO UTC of atMs}`, e.g.
 * 'sch-42@2026-03-08T07:00:00.000Z'. Stable (a function of its arguments only), readable, and
 * at most 200 printable ASCII characters without spaces. Injective: the ISO part has fixed width and
 * no '@', so the id splits back at its last '@'. Throws SCHED_E_INVALID_ARGUMENT for a schedule id
 * that is empty, longer than MAX_SCHEDULE_ID_LENGTH or not printable ASCII, or an atMs that is not
 * whole ms in [0, MAX_INSTANT_MS].
 */
export function occurrenceId(scheduleId: string, atMs: number): string {
  if (
    typeof scheduleId !== 'string' ||
    scheduleId.length > MAX_SCHEDULE_ID_LENGTH ||
    !SCHEDULE_ID.test(scheduleId)
  ) {
    throw new RecurrenceError(
      RecurrenceErrorCode.InvalidArgument,
      `scheduleId must be 1 to ${MAX_SCHEDULE_ID_LENGTH} printable ASCII characters without spaces, got ${JSON.stringify(scheduleId)}`,
    );
  }
  if (!(Number.isSafeInteger(atMs) && atMs >= 0 && atMs <= MAX_INSTANT_MS)) {
    throw new RecurrenceError(
      RecurrenceErrorCode.InvalidArgument,
      `atMs must be whole ms in [0, ${MAX_INSTANT_MS}], got ${String(atMs)}`,
    );
  }
  return `${scheduleId}@${new Date(atMs).toISOString()}`;
}
