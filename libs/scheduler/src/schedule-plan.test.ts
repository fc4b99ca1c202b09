import { describe, expect, it } from 'vitest';
import { compileRecurrence } from '@sched/recurrence';
import type { ScheduleRow } from '@sched/store';
import { planSchedule } from './schedule-plan.js';

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0); // every-second schedule anchored here
const base: ScheduleRow = {
  scheduleId: 's1',
  tenantId: 'default',
  queue: 'q',
  payload: Buffer.from('{}'),
  priority: 0,
  headers: {},
  maxAttempts: null,
  executionTimeoutMs: null,
  retryPolicy: null,
  cron: null,
  intervalMs: 1_000,
  timeZone: 'UTC',
  startAtMs: T0,
  endAtMs: null,
  maxRuns: null,
  runs: 0,
  nextFireAtMs: T0,
  misfirePolicy: 'FIRE_ONCE',
  misfireFireAllCap: 100,
  misfireDeadlineMs: null,
  overlapPolicy: 'ALLOW',
  dstSkippedPolicy: 'SHIFT',
  dstRepeatedPolicy: 'FIRST',
  jitterWindowMs: 0,
  state: 'ACTIVE',
  bufferedAtMs: null,
  lastJobId: null,
  version: 1,
};
const plan = (s: Partial<ScheduleRow>, nowMs: number, prevActive = false) => {
  const row = { ...base, ...s };
  return planSchedule({
    s: row,
    rec: compileRecurrence({
      cron: row.cron,
      intervalMs: row.intervalMs,
      timeZone: row.timeZone,
      startAtMs: row.startAtMs,
      endAtMs: row.endAtMs,
      dstSkipped: row.dstSkippedPolicy,
      dstRepeated: row.dstRepeatedPolicy,
    }),
    nowMs,
    prevActive,
    misfireThresholdMs: 1_500,
    maxPerPass: 1_000,
  });
};
const fates = (p: ReturnType<typeof plan>) => p.records.map((r) => r.fate);

describe('planSchedule', () => {
  it('fires an on-time occurrence at its time and advances to the next', () => {
    const p = plan({}, T0 + 5);
    expect(fates(p)).toEqual(['FIRED']);
    expect(p.jobs[0]).toMatchObject({ dueAtMs: T0, occurrenceAtMs: T0, scheduleId: 's1' });
    expect(p.jobs[0]!.jobId).toBe(p.records[0]!.occurrenceId);
    expect(p.advance).toMatchObject({ nextFireAtMs: T0 + 1_000, runsDelta: 1, state: 'ACTIVE' });
  });

  it('misfire FIRE_ONCE: the most recent late occurrence fires now, the rest are coalesced', () => {
    const now = T0 + 5_200; // T0..T0+5000 due; T0..T0+3000 are more than 1.5 s late
    const p = plan({}, now);
    expect(fates(p)).toEqual(['COALESCED', 'COALESCED', 'COALESCED', 'FIRED', 'FIRED', 'FIRED']);
    expect(p.jobs.map((j) => j.dueAtMs)).toEqual([now, T0 + 4_000, T0 + 5_000]);
  });

  it('misfire FIRE_ALL fires every late one up to the cap; SKIP records them missed', () => {
    expect(fates(plan({ misfirePolicy: 'FIRE_ALL', misfireFireAllCap: 2 }, T0 + 5_200))).toEqual([
      'FIRED',
      'FIRED',
      'MISSED',
      'MISSED',
      'FIRED',
      'FIRED',
    ]);
    expect(fates(plan({ misfirePolicy: 'SKIP' }, T0 + 5_200))).toEqual([
      'MISSED',
      'MISSED',
      'MISSED',
      'MISSED',
      'FIRED',
      'FIRED',
    ]);
  });

  it('expires occurrences older than the misfire deadline', () => {
    expect(fates(plan({ misfirePolicy: 'FIRE_ALL', misfireDeadlineMs: 3_000 }, T0 + 5_200))).toEqual([
      'EXPIRED',
      'EXPIRED',
      'EXPIRED',
      'FIRED',
      'FIRED',
      'FIRED',
    ]);
  });

  it('overlap policies while the previous run is active', () => {
    expect(fates(plan({ overlapPolicy: 'SKIP', lastJobId: 'prev' }, T0 + 5, true))).toEqual(['SKIPPED']);
    const buf = plan({ overlapPolicy: 'BUFFER_ONE', lastJobId: 'prev' }, T0 + 5, true);
    expect(fates(buf)).toEqual(['BUFFERED']);
    expect(buf.advance.bufferedAtMs).toBe(T0);
    expect(
      fates(plan({ overlapPolicy: 'BUFFER_ONE', lastJobId: 'prev', bufferedAtMs: T0 - 1_000 }, T0 + 5, true)),
    ).toEqual(['SKIPPED']);
    const cancel = plan({ overlapPolicy: 'CANCEL_PREVIOUS', lastJobId: 'prev' }, T0 + 5, true);
    expect(fates(cancel)).toEqual(['FIRED']);
    expect(cancel.cancelJobIds).toEqual(['prev']);
    expect(fates(plan({ overlapPolicy: 'ALLOW', lastJobId: 'prev' }, T0 + 5, true))).toEqual(['FIRED']);
  });

  it('releases a buffered occurrence once the previous run is over', () => {
    const p = plan(
      { overlapPolicy: 'BUFFER_ONE', lastJobId: 'prev', bufferedAtMs: T0 - 1_000, nextFireAtMs: T0 + 1_000 },
      T0 + 5,
      false,
    );
    expect(fates(p)).toEqual(['FIRED']);
    expect(p.records[0]!.nominalAtMs).toBe(T0 - 1_000);
    expect(p.advance.bufferedAtMs).toBeNull();
  });

  it('completes at maxRuns and at the end time', () => {
    const p = plan({ maxRuns: 3, runs: 2 }, T0 + 5_200, false);
    expect(p.jobs).toHaveLength(1);
    expect(p.advance).toMatchObject({ state: 'COMPLETED', nextFireAtMs: null });
    const end = plan({ endAtMs: T0 + 500 }, T0 + 5);
    expect(fates(end)).toEqual(['FIRED']);
    expect(end.advance).toMatchObject({ state: 'COMPLETED', nextFireAtMs: null });
  });

  it('records a DST-skipped wall time and shifts with SHIFT (America/New_York, 2026-03-08)', () => {
    const before = Date.UTC(2026, 2, 8, 6, 0, 0); // 01:00 EST
    const rule = { cron: '30 2 * * *', intervalMs: null, timeZone: 'America/New_York', startAtMs: null };
    const skip = plan(
      { ...rule, dstSkippedPolicy: 'SKIP', nextFireAtMs: before },
      Date.UTC(2026, 2, 8, 8, 0, 0),
    );
    expect(fates(skip)).toEqual(['DST_SKIPPED']);
    expect(skip.jobs).toEqual([]);
    const shift = plan({ ...rule, nextFireAtMs: before }, Date.UTC(2026, 2, 8, 7, 0, 0) + 5); // 03:00:00.005 EDT
    expect(fates(shift)).toEqual(['DST_SHIFTED']);
    expect(shift.jobs[0]!.dueAtMs).toBe(Date.UTC(2026, 2, 8, 7, 0, 0)); // 03:00 EDT, the first valid instant
  });

  it('spreads with the jitter window, never before due, deterministically', () => {
    const a = plan({ jitterWindowMs: 60_000 }, T0 + 5);
    const b = plan({ jitterWindowMs: 60_000 }, T0 + 5);
    expect(a.jobs[0]!.dueAtMs).toBe(b.jobs[0]!.dueAtMs);
    expect(a.jobs[0]!.dueAtMs).toBeGreaterThanOrEqual(T0);
    expect(a.jobs[0]!.dueAtMs).toBeLessThanOrEqual(T0 + 60_000);
  });
});
