import type { IANAZone } from 'luxon';
import type { CronRule } from './cron-rule';
import { type OccurrenceDst, type OccurrencePage, PageBuilder } from './occurrence-page';
import { scanCron, scanInterval } from './occurrence-scan';
import { RecurrenceError, RecurrenceErrorCode } from './recurrence-error';
import { type RecurrenceSpec, type ResolvedRecurrenceSpec, validateSpec } from './recurrence-spec';
import { MAX_INSTANT_MS } from './wall-clock';

/** Largest `limit` / `maxCount` / `n` accepted (a page holds its occurrences in memory). */
export const MAX_PAGE_SIZE = 1_000_000;

/**
 * `next()` cuts a page short after this many skipped records (see `OccurrencePage.coveredUntilMs`).
 * Only a rule whose wall times keep falling into DST gaps under policy SKIP gets near it, e.g. every
 * second of 02:xx on the second Sunday of March in New York: it never fires, and without the cap one
 * call would walk to the year 9999.
 */
export const MAX_SKIPPED_PER_PAGE = 10_000;

/**
 * A compiled recurrence: immutable, holds no clock and no offsets, safe to share and to call
 * concurrently (each call works on its own state). Times are integer ms since the Unix epoch.
 */
export interface Recurrence {
  /** The validated spec, defaults applied. */
  readonly spec: ResolvedRecurrenceSpec;
  /**
   * Up to `limit` (0..MAX_PAGE_SIZE) occurrences with atMs > afterMs, atMs >= startAtMs and
   * atMs <= endAtMs, in increasing atMs, with the DST-skipped wall times (policy SKIP) of the same
   * span: (afterMs, coveredUntilMs]. Fewer than `limit` occurrences means the end was reached
   * (`exhausted`) or, rarely, that MAX_SKIPPED_PER_PAGE skipped records came first: page on from
   * `coveredUntilMs`. Cost: O(wall times between afterMs and the last occurrence).
   */
  next(afterMs: number, limit: number): OccurrencePage;
  /**
   * The occurrences with fromMs < atMs <= toMs (and within start/end), at most `maxCount`
   * (0..MAX_PAGE_SIZE), with all DST-skipped wall times of the span covered. `truncated` is true iff
   * the span holds more than `maxCount` occurrences; `coveredUntilMs` is then the last one returned.
   */
  between(fromMs: number, toMs: number, maxCount: number): OccurrencePage & { truncated: boolean };
}

/**
 * Validates a spec and compiles it once (cron parsed into lookup tables, zone resolved), or throws a
 * RecurrenceError naming the problem and its fix: SCHED_E_INVALID_CRON, SCHED_E_UNKNOWN_ZONE,
 * SCHED_E_END_BEFORE_START, SCHED_E_INVALID_INTERVAL, SCHED_E_INVALID_RECURRENCE. Pure: either
 * everything is valid and a Recurrence is returned, or nothing is produced.
 */
export function compileRecurrence(spec: RecurrenceSpec): Recurrence {
  const { spec: resolved, zone, rule } = validateSpec(spec);
  return Object.freeze(new CompiledRecurrence(resolved, zone, rule));
}

class CompiledRecurrence implements Recurrence {
  /** The last instant an occurrence can have. */
  private readonly lastMs: number;

  constructor(
    readonly spec: ResolvedRecurrenceSpec,
    private readonly zone: IANAZone,
    private readonly rule: CronRule | null,
  ) {
    this.lastMs = spec.endAtMs ?? MAX_INSTANT_MS;
  }

  next(afterMs: number, limit: number): OccurrencePage {
    checkInstantArgument('afterMs', afterMs);
    checkCount('limit', limit);
    if (limit === 0)
      return { occurrences: [], skipped: [], coveredUntilMs: afterMs, exhausted: afterMs >= this.lastMs };
    return this.page(afterMs, this.lastMs, limit, MAX_SKIPPED_PER_PAGE);
  }

  between(fromMs: number, toMs: number, maxCount: number): OccurrencePage & { truncated: boolean } {
    checkInstantArgument('fromMs', fromMs);
    checkInstantArgument('toMs', toMs);
    checkCount('maxCount', maxCount);
    if (toMs < fromMs) {
      throw new RecurrenceError(
        RecurrenceErrorCode.InvalidArgument,
        `toMs (${toMs}) must be >= fromMs (${fromMs})`,
      );
    }
    // One more than asked, to know whether there are more.
    const page = this.page(fromMs, Math.min(toMs, this.lastMs), maxCount + 1, Number.POSITIVE_INFINITY);
    if (page.occurrences.length <= maxCount) return { ...page, truncated: false };
    page.occurrences.length = maxCount;
    const coveredUntilMs = page.occurrences[maxCount - 1]?.atMs ?? fromMs;
    return {
      occurrences: page.occurrences,
      skipped: page.skipped.filter((s) => s.atMs <= coveredUntilMs),
      coveredUntilMs,
      exhausted: false,
      truncated: true,
    };
  }

  /** The page of (afterMs, highMs]; limit >= 1. */
  private page(afterMs: number, highMs: number, limit: number, skippedCap: number): OccurrencePage {
    const { startAtMs, intervalMs } = this.spec;
    // Instants are >= 0 and >= startAtMs: the low end is exclusive.
    const lowMs = Math.max(afterMs, startAtMs === null ? -1 : startAtMs - 1, -1);
    if (lowMs >= highMs) {
      const coveredUntilMs = Math.max(afterMs, highMs);
      return { occurrences: [], skipped: [], coveredUntilMs, exhausted: coveredUntilMs >= this.lastMs };
    }
    const page = new PageBuilder(lowMs, highMs, limit, skippedCap);
    if (this.rule !== null) {
      scanCron(this.rule, this.zone, this.spec.dstSkipped, this.spec.dstRepeated, page, lowMs);
    } else if (intervalMs !== null) {
      scanInterval(startAtMs ?? 0, intervalMs, this.zone, page, lowMs);
    }
    const coveredUntilMs = Math.max(afterMs, page.cutMs);
    return {
      occurrences: page.occurrences,
      skipped: page.skipped,
      coveredUntilMs,
      exhausted: page.cutMs >= this.lastMs,
    };
  }
}

/** One line of a preview: an occurrence in UTC and in the schedule's zone. */
export interface PreviewLine {
  /** ISO UTC, e.g. '2026-03-08T07:00:00.000Z'. */
  utc: string;
  /** ISO local with offset, e.g. '2026-03-08T03:00:00-04:00'. */
  local: string;
  /** The wall time the rule matched (differs from `local` when shifted). */
  localWall: string;
  dst: OccurrenceDst;
}

/**
 * The next `n` (0..MAX_PAGE_SIZE) fire times after `fromMs` (exclusive) of a spec, in UTC and local
 * time: validates like `compileRecurrence` (and throws the same errors).
 */
export function preview(spec: RecurrenceSpec, fromMs: number, n: number): PreviewLine[] {
  return compileRecurrence(spec)
    .next(fromMs, n)
    .occurrences.map((o) => ({
      utc: new Date(o.atMs).toISOString(),
      local: o.local,
      localWall: o.localWall,
      dst: o.dst,
    }));
}

function checkInstantArgument(name: string, value: number): void {
  if (!Number.isSafeInteger(value)) {
    throw new RecurrenceError(
      RecurrenceErrorCode.InvalidArgument,
      `${name} must be whole ms since the epoch, got ${String(value)}`,
    );
  }
}

function checkCount(name: string, value: number): void {
  if (!(Number.isSafeInteger(value) && value >= 0 && value <= MAX_PAGE_SIZE)) {
    throw new RecurrenceError(
      RecurrenceErrorCode.InvalidArgument,
      `${name} must be an integer in [0, ${MAX_PAGE_SIZE}], got ${String(value)}`,
    );
  }
}
