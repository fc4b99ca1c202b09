import { jitterOffsetMs, occurrenceId, type Recurrence } from '@sched/recurrence';
import type { NewJob, OccurrenceRecord, ScheduleAdvance, ScheduleRow } from '@sched/store';

export interface PlanInput {
  s: ScheduleRow;
  rec: Recurrence;
  nowMs: number;
  /** The schedule's latest fired job is still SCHEDULED, DISPATCHED or RUNNING. */
  prevActive: boolean;
  /** An occurrence more than this late was missed (scheduler down, partition unowned). */
  misfireThresholdMs: number;
  /** Occurrences handled per pass at most (the rest next pass: bounded work). */
  maxPerPass: number;
}

export interface SchedulePlan {
  records: OccurrenceRecord[];
  /** One per FIRED / DST_SHIFTED record (job id = occurrence id). */
  jobs: NewJob[];
  cancelJobIds: string[];
  advance: ScheduleAdvance;
}

/**
 * Decides the fate of every occurrence of one schedule that is due by `nowMs`. Pure.
 *
 * - A buffered occurrence (BUFFER_ONE) is released once the previous run is over.
 * - Occurrences more than `misfireThresholdMs` late follow the misfire policy: past their deadline
 *   → EXPIRED; SKIP → MISSED; FIRE_ONCE → the most recent fires now, the rest COALESCED;
 *   FIRE_ALL → up to the cap fire now, the rest MISSED.
 * - On-time occurrences fire at their time plus the deterministic jitter.
 * - While the previous run is active, the overlap policy decides: ALLOW fires, SKIP → SKIPPED,
 *   BUFFER_ONE holds one (BUFFERED) and skips the rest, CANCEL_PREVIOUS cancels it and fires.
 * - DST-skipped wall times are recorded DST_SKIPPED; shifted ones fire as DST_SHIFTED.
 * - maxRuns and the end time complete the schedule.
 */
export function planSchedule(p: PlanInput): SchedulePlan {
  const { s, rec, nowMs } = p;
  const records: OccurrenceRecord[] = [];
  const jobs: NewJob[] = [];
  const cancelJobIds: string[] = [];
  let runs = s.runs;
  let lastJobId = s.lastJobId;
  let bufferedAt = s.bufferedAtMs;
  let prevActive = p.prevActive;
  let nextFireAt = s.nextFireAtMs;
  const budgetLeft = () => s.maxRuns === null || runs < s.maxRuns;

  const record = (
    atMs: number,
    fate: OccurrenceRecord['fate'],
    jobId: string | null,
    localWall: string | null,
    detail: string | null,
  ) =>
    records.push({
      scheduleId: s.scheduleId,
      nominalAtMs: atMs,
      occurrenceId: occurrenceId(s.scheduleId, atMs),
      fate,
      jobId,
      localWall,
      detail,
    });

  const fire = (
    atMs: number,
    dueMs: number,
    shifted: boolean,
    localWall: string | null,
    detail: string | null,
  ) => {
    const jobId = occurrenceId(s.scheduleId, atMs);
    record(atMs, shifted ? 'DST_SHIFTED' : 'FIRED', jobId, localWall, detail);
    jobs.push({
      jobId,
      tenantId: s.tenantId,
      queue: s.queue,
      dueAtMs: dueMs,
      priority: s.priority,
      payload: s.payload,
      businessKey: null,
      maxAttempts: s.maxAttempts,
      retryPolicy: s.retryPolicy,
      expiresAtMs: null,
      executionTimeoutMs: s.executionTimeoutMs,
      headers: s.headers,
      scheduleId: s.scheduleId,
      occurrenceAtMs: atMs,
    });
    runs++;
    lastJobId = jobId;
  };

  /** Fires or holds back one occurrence according to the overlap policy. */
  const fireWithOverlap = (
    atMs: number,
    dueMs: number,
    shifted: boolean,
    localWall: string | null,
    detail: string | null,
  ) => {
    if (prevActive) {
      switch (s.overlapPolicy) {
        case 'SKIP':
          record(atMs, 'SKIPPED', null, localWall, 'previous run still active');
          return;
        case 'BUFFER_ONE':
          if (bufferedAt === null) {
            bufferedAt = atMs;
            record(atMs, 'BUFFERED', null, localWall, 'waiting for the previous run');
          } else {
            record(
              atMs,
              'SKIPPED',
              null,
              localWall,
              'previous run still active and one occurrence already buffered',
            );
          }
          return;
        case 'CANCEL_PREVIOUS':
          if (lastJobId) cancelJobIds.push(lastJobId);
          break;
        case 'ALLOW':
          break;
      }
    }
    fire(atMs, dueMs, shifted, localWall, detail);
    // Later occurrences of this same pass are catch-up of one outage, not overlaps of each other.
    prevActive = false;
  };

  if (bufferedAt !== null && !p.prevActive && budgetLeft()) {
    const at = bufferedAt;
    bufferedAt = null;
    fire(at, nowMs, false, null, 'released from the overlap buffer');
    prevActive = true;
  }

  if (nextFireAt !== null && nextFireAt <= nowMs && budgetLeft()) {
    const { occurrences, skipped, truncated } = rec.between(nextFireAt - 1, nowMs, p.maxPerPass);
    // A skipped wall time has no instant of its own (it is reported at the gap's start): keep its
    // ledger key apart from other skipped times and from real occurrences at that same instant.
    const seenSkip = new Set<number>(occurrences.map((o) => o.atMs));
    for (const sk of skipped) {
      let at = sk.atMs;
      while (seenSkip.has(at)) at++;
      seenSkip.add(at);
      record(at, 'DST_SKIPPED', null, sk.localWall, 'wall time does not exist (DST gap); policy SKIP');
    }
    const late = occurrences.filter((o) => nowMs - o.atMs > p.misfireThresholdMs);
    const onTime = occurrences.filter((o) => nowMs - o.atMs <= p.misfireThresholdMs);
    const live = late.filter((o) => {
      if (s.misfireDeadlineMs !== null && nowMs - o.atMs > s.misfireDeadlineMs) {
        record(
          o.atMs,
          'EXPIRED',
          null,
          o.localWall,
          `older than the misfire deadline of ${s.misfireDeadlineMs} ms`,
        );
        return false;
      }
      return true;
    });
    live.forEach((o, i) => {
      if (!budgetLeft()) return;
      const shifted = o.dst === 'SHIFTED';
      switch (s.misfirePolicy) {
        case 'SKIP':
          record(o.atMs, 'MISSED', null, o.localWall, 'missed; misfire policy SKIP');
          break;
        case 'FIRE_ONCE':
          if (i === live.length - 1)
            fireWithOverlap(
              o.atMs,
              nowMs,
              shifted,
              o.localWall,
              `misfire: fired late, ${live.length - 1} coalesced`,
            );
          else
            record(
              o.atMs,
              'COALESCED',
              null,
              o.localWall,
              'misfire policy FIRE_ONCE: coalesced into the latest',
            );
          break;
        case 'FIRE_ALL':
          if (i < s.misfireFireAllCap)
            fireWithOverlap(o.atMs, nowMs, shifted, o.localWall, 'misfire: fired late (FIRE_ALL)');
          else
            record(o.atMs, 'MISSED', null, o.localWall, `beyond the FIRE_ALL cap of ${s.misfireFireAllCap}`);
          break;
      }
    });
    for (const o of onTime) {
      if (!budgetLeft()) break;
      const due = o.atMs + jitterOffsetMs(`${s.scheduleId}@${o.atMs}`, s.jitterWindowMs);
      fireWithOverlap(o.atMs, due, o.dst === 'SHIFTED', o.localWall, null);
    }
    const handledUpTo =
      truncated && occurrences.length > 0 ? occurrences[occurrences.length - 1]!.atMs : nowMs;
    nextFireAt = nextAfter(rec, handledUpTo);
  }

  const done = !budgetLeft() || nextFireAt === null;
  const state = done && bufferedAt === null ? 'COMPLETED' : s.state;
  return {
    records,
    jobs,
    cancelJobIds,
    advance: {
      scheduleId: s.scheduleId,
      nextFireAtMs: done ? null : nextFireAt,
      runsDelta: runs - s.runs,
      state,
      lastJobId,
      bufferedAtMs: bufferedAt,
    },
  };
}

/**
 * The next occurrence after `afterMs`, or null when the rule is exhausted. A page can come back
 * empty without being the end (a rule whose matches all fall in DST gaps under SKIP): then continue
 * from where it stopped, a bounded number of pages, and otherwise resume the scan there next pass.
 */
function nextAfter(rec: Recurrence, afterMs: number): number | null {
  let from = afterMs;
  for (let page = 0; page < 8; page++) {
    const r = rec.next(from, 1);
    if (r.occurrences[0]) return r.occurrences[0].atMs;
    if (r.exhausted) return null;
    from = r.coveredUntilMs;
  }
  return from;
}
