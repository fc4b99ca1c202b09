import { IANAZone } from 'luxon';
import { type CronRule, parseCron } from './cron-rule';
import { RecurrenceError, RecurrenceErrorCode } from './recurrence-error';
import { MAX_INSTANT_MS } from './wall-clock';

/** What to do with a wall time that does not exist (clocks went forward over it). */
export type DstSkippedPolicy =
  /** Fire at the first valid instant after the gap (02:30 in a 02:00→03:00 gap fires at 03:00). */
  | 'SHIFT'
  /** Do not fire; the wall time is reported as skipped. */
  | 'SKIP';

/** What to do with a wall time that exists twice (clocks went back over it). */
export type DstRepeatedPolicy =
  /** Fire at the earlier instant only; the second pass over the repeated hour does not fire. */
  | 'FIRST'
  /** Fire at the later instant only. */
  | 'LAST'
  /** Fire at both. */
  | 'BOTH';

export const DEFAULT_DST_SKIPPED: DstSkippedPolicy = 'SHIFT';
export const DEFAULT_DST_REPEATED: DstRepeatedPolicy = 'FIRST';

/** Smallest accepted interval. */
export const MIN_INTERVAL_MS = 1000;

/**
 * A recurring schedule's rule. Instants are integer ms since the Unix epoch, within
 * [0, MAX_INSTANT_MS] (1970 to 9999-01-01).
 */
export interface RecurrenceSpec {
  /**
   * A cron-parser expression evaluated on the zone's wall clock: 5 fields (minute hour
   * day-of-month month day-of-week, at second 0) or 6 (seconds first), or `@daily`-style names.
   * Exactly one of `cron` and `intervalMs` is set.
   */
  cron: string | null;
  /**
   * A fixed interval in ms (integer >= 1000), in absolute time: fires at startAtMs + k·intervalMs
   * (k >= 0), or at multiples of intervalMs since the epoch when startAtMs is null. Not affected by DST.
   */
  intervalMs: number | null;
  /**
   * IANA zone name known to luxon/ICU ('Europe/Paris', 'UTC', 'Etc/GMT-2'); matched as ICU matches
   * it (case-insensitively) and kept as given. Offsets such as '+02:00' are rejected: an offset does
   * not follow DST; 'Etc/GMT-2' is the IANA name of a fixed UTC+02:00 (note the inverted sign).
   */
  timeZone: string;
  /** Occurrences at or after this instant; null: no lower bound (intervals then anchor at the epoch). */
  startAtMs: number | null;
  /** Occurrences at or before this instant; must be after startAtMs; null: no end. */
  endAtMs: number | null;
  /** Default SHIFT. Ignored by intervals. */
  dstSkipped?: DstSkippedPolicy | null;
  /** Default FIRST. Ignored by intervals. */
  dstRepeated?: DstRepeatedPolicy | null;
}

/** A validated spec with its defaults applied. */
export interface ResolvedRecurrenceSpec {
  readonly cron: string | null;
  readonly intervalMs: number | null;
  readonly timeZone: string;
  readonly startAtMs: number | null;
  readonly endAtMs: number | null;
  readonly dstSkipped: DstSkippedPolicy;
  readonly dstRepeated: DstRepeatedPolicy;
}

export interface ValidatedSpec {
  spec: ResolvedRecurrenceSpec;
  zone: IANAZone;
  /** Set iff spec.cron is. */
  rule: CronRule | null;
}

const SKIPPED_POLICIES: readonly string[] = ['SHIFT', 'SKIP'];
const REPEATED_POLICIES: readonly string[] = ['FIRST', 'LAST', 'BOTH'];
/** The shape of IANA names: no leading sign, no colon (rules out '+02:00' on ICU versions that take it). */
const IANA_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

/**
 * Checks every field of a spec and returns it resolved, or throws the first problem as a
 * RecurrenceError with its code and a message saying how to fix it. Pure; nothing is kept.
 */
export function validateSpec(input: RecurrenceSpec): ValidatedSpec {
  const invalid = (code: RecurrenceErrorCode, message: string): never => {
    throw new RecurrenceError(code, message);
  };
  if (typeof input !== 'object' || input === null)
    invalid(RecurrenceErrorCode.InvalidRecurrence, 'the recurrence spec must be an object');

  const { timeZone } = input;
  if (typeof timeZone !== 'string' || !IANA_NAME.test(timeZone) || !IANAZone.isValidZone(timeZone)) {
    invalid(
      RecurrenceErrorCode.UnknownZone,
      `unknown time zone ${JSON.stringify(timeZone)}: use an IANA name such as "America/New_York" or "UTC"; ` +
        'for a fixed offset use "Etc/GMT-2" (= UTC+02:00, sign inverted)',
    );
  }

  const cron = input.cron ?? null;
  const intervalMs = input.intervalMs ?? null;
  if ((cron === null) === (intervalMs === null)) {
    invalid(RecurrenceErrorCode.InvalidRecurrence, 'set exactly one of cron and intervalMs');
  }
  let rule: CronRule | null = null;
  if (cron !== null) rule = parseCron(cron);
  if (intervalMs !== null && !(Number.isSafeInteger(intervalMs) && intervalMs >= MIN_INTERVAL_MS)) {
    invalid(
      RecurrenceErrorCode.InvalidInterval,
      `intervalMs must be a whole number of milliseconds >= ${MIN_INTERVAL_MS}, got ${String(intervalMs)}`,
    );
  }

  const startAtMs = checkInstant('startAtMs', input.startAtMs);
  const endAtMs = checkInstant('endAtMs', input.endAtMs);
  if (startAtMs !== null && endAtMs !== null && endAtMs <= startAtMs) {
    invalid(
      RecurrenceErrorCode.EndBeforeStart,
      `endAtMs (${new Date(endAtMs).toISOString()}) must be after startAtMs (${new Date(startAtMs).toISOString()})`,
    );
  }

  const dstSkipped = input.dstSkipped ?? DEFAULT_DST_SKIPPED;
  if (!SKIPPED_POLICIES.includes(dstSkipped)) {
    invalid(
      RecurrenceErrorCode.InvalidRecurrence,
      `dstSkipped must be one of ${SKIPPED_POLICIES.join(', ')}, got ${JSON.stringify(dstSkipped)}`,
    );
  }
  const dstRepeated = input.dstRepeated ?? DEFAULT_DST_REPEATED;
  if (!REPEATED_POLICIES.includes(dstRepeated)) {
    invalid(
      RecurrenceErrorCode.InvalidRecurrence,
      `dstRepeated must be one of ${REPEATED_POLICIES.join(', ')}, got ${JSON.stringify(dstRepeated)}`,
    );
  }

  const spec: ResolvedRecurrenceSpec = Object.freeze({
    cron: cron === null ? null : cron.trim(),
    intervalMs,
    timeZone,
    startAtMs,
    endAtMs,
    dstSkipped,
    dstRepeated,
  });
  return { spec, zone: IANAZone.create(timeZone), rule };
}

function checkInstant(name: string, value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_INSTANT_MS)
    return value;
  throw new RecurrenceError(
    RecurrenceErrorCode.InvalidRecurrence,
    `${name} must be null or whole ms since the epoch in [0, ${MAX_INSTANT_MS}] (1970 to 9999), got ${String(value)}`,
  );
}
