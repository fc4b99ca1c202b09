import type { IANAZone } from 'luxon';
import type { CronRule } from './cron-rule';
import type { OccurrenceDst, PageBuilder } from './occurrence-page';
import type { DstRepeatedPolicy, DstSkippedPolicy } from './recurrence-spec';
import { MAX_INSTANT_MS, MS_PER_DAY, formatLocal, formatWall } from './wall-clock';
import { OFFSET_BOUND_MS, ZoneTimeline } from './zone-timeline';

/** Twice the offset bound: how far around an instant the offsets matter (see the bounds below). */
const LOOKAROUND_MS = 2 * OFFSET_BOUND_MS;
/** Last day a wall time can fall on (the horizon plus the largest offset). */
const MAX_WALL_DAY = Math.floor((MAX_INSTANT_MS + OFFSET_BOUND_MS) / MS_PER_DAY) + 1;

/**
 * Feeds `page` every occurrence of a cron rule with an instant after `lowMs`, until the page's cut.
 *
 * The rule runs on the naive wall clock (`CronRule.nextWallAfter`); each matched wall time W is
 * resolved to real instants in the zone (`ZoneTimeline.resolve`) and the DST policies applied:
 *   UNIQUE   → one occurrence;
 *   REPEATED → FIRST: the earlier instant, LAST: the later, BOTH: both. Walls are visited once each,
 *              so FIRST never fires again during the second pass over a repeated hour;
 *   SKIPPED  → SHIFT: the first instant after the gap (the page collapses several gap walls landing
 *              there into one occurrence), SKIP: a skipped record at the gap's instant.
 *
 * Wall order is not instant order around a fall-back (01:45 first pass is before 01:15 second
 * pass), so the walk's bounds come from the offsets, not from the instants seen:
 *   start: an instant t > lowMs has wall t + offset(t) > lowMs + (smallest offset over
 *          [lowMs, lowMs + 36 h]); beyond 36 h every wall is larger anyway (|offset| <= 18 h).
 *          A gap wall shifted to T > lowMs is at least T + offset just before T: same bound.
 *   stop:  an instant t <= cut has wall <= cut + (largest offset over [cut - 36 h, cut]); a gap wall
 *          shifted to T <= cut is below T's wall. Walls after that bound cannot reach the page.
 * Cost: O(wall times visited), plus one luxon lookup (~8 µs) per day covered and ~27 per transition.
 */
export function scanCron(
  rule: CronRule,
  zone: IANAZone,
  skippedPolicy: DstSkippedPolicy,
  repeatedPolicy: DstRepeatedPolicy,
  page: PageBuilder,
  lowMs: number,
): void {
  const timeline = new ZoneTimeline(zone);
  timeline.cover(lowMs - LOOKAROUND_MS, lowMs + LOOKAROUND_MS);
  let wall = lowMs + timeline.minOffset(lowMs, lowMs + LOOKAROUND_MS);
  let cut = Number.NaN;
  let stopWall = 0;

  const occur = (atMs: number, offsetMs: number, dst: OccurrenceDst) => {
    if (page.wants(atMs))
      page.addOccurrence({ atMs, localWall: formatWall(wall), local: formatLocal(atMs, offsetMs), dst });
  };

  for (;;) {
    if (page.cutMs !== cut) {
      cut = page.cutMs;
      stopWall = cut + timeline.maxOffset(cut - LOOKAROUND_MS, cut);
    }
    const next = rule.nextWallAfter(wall, MAX_WALL_DAY);
    if (next === null || next > stopWall) return;
    wall = next;
    const r = timeline.resolve(wall);
    switch (r.kind) {
      case 'UNIQUE':
        occur(r.atMs, r.offsetMs, 'NONE');
        break;
      case 'REPEATED':
        if (repeatedPolicy !== 'LAST') occur(r.firstAtMs, r.firstOffsetMs, 'REPEATED_FIRST');
        if (repeatedPolicy !== 'FIRST') occur(r.secondAtMs, r.secondOffsetMs, 'REPEATED_SECOND');
        break;
      case 'SKIPPED':
        if (skippedPolicy === 'SHIFT') occur(r.gapAtMs, r.offsetAfterMs, 'SHIFTED');
        else if (page.wants(r.gapAtMs))
          page.addSkipped({ localWall: formatWall(wall), reason: 'DST_SKIPPED', atMs: r.gapAtMs });
        break;
    }
  }
}

/**
 * Feeds `page` the occurrences of a fixed interval after `lowMs`: anchorMs + k·intervalMs, k >= 0,
 * until the page's cut. Absolute time, so DST never applies (dst 'NONE'); the zone only formats.
 */
export function scanInterval(
  anchorMs: number,
  intervalMs: number,
  zone: IANAZone,
  page: PageBuilder,
  lowMs: number,
): void {
  let k = Math.max(0, Math.floor((lowMs - anchorMs) / intervalMs) + 1);
  while (k > 0 && anchorMs + (k - 1) * intervalMs > lowMs) k--;
  while (anchorMs + k * intervalMs <= lowMs) k++;
  const timeline = new ZoneTimeline(zone);
  for (; ; k++) {
    const atMs = anchorMs + k * intervalMs;
    if (atMs > page.cutMs) return;
    timeline.cover(atMs, atMs);
    const offsetMs = timeline.offsetAt(atMs);
    page.addOccurrence({
      atMs,
      localWall: formatWall(atMs + offsetMs),
      local: formatLocal(atMs, offsetMs),
      dst: 'NONE',
    });
  }
}
