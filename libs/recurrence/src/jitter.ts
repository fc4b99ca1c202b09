import { createHash } from 'node:crypto';
import { RecurrenceError, RecurrenceErrorCode } from './recurrence-error';

/** Largest jitter window (~49.7 days). With 48 hash bits, the modulo bias stays below 2^-16. */
export const MAX_JITTER_WINDOW_MS = 2 ** 32 - 1;

/**
 * Deterministic jitter: an offset in [0, windowMs] (integer ms, both ends included) chosen from
 * `key`, to add to a nominal fire time so that many schedules firing at 09:00 spread out, never
 * before their time. The same key always gives the same offset (across processes and versions:
 * SHA-256, first 48 bits, modulo windowMs + 1), so a replay lands on the same instant; use a key
 * that names the occurrence, e.g. `${scheduleId}@${atMs}`. windowMs 0 gives 0.
 */
export function jitterOffsetMs(key: string, windowMs: number): number {
  if (typeof key !== 'string') {
    throw new RecurrenceError(RecurrenceErrorCode.InvalidArgument, 'jitter key must be a string');
  }
  if (!(Number.isSafeInteger(windowMs) && windowMs >= 0 && windowMs <= MAX_JITTER_WINDOW_MS)) {
    throw new RecurrenceError(
      RecurrenceErrorCode.InvalidArgument,
      `jitter windowMs must be an integer in [0, ${MAX_JITTER_WINDOW_MS}], got ${String(windowMs)}`,
    );
  }
  if (windowMs === 0) return 0;
  const hash = createHash('sha256').update(key, 'utf8').digest();
  return hash.readUIntBE(0, 6) % (windowMs + 1);
}
