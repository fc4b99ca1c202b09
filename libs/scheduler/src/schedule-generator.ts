import { writeSync } from 'node:fs';
import type pg from 'pg';
import type { Logger } from '@sched/logging';
import type { Recurrence } from '@sched/recurrence';
import { occurrenceId } from '@sched/recurrence';
import {
  FencedError,
  inTransaction,
  jobCancel,
  jobCreateBatch,
  jobStates,
  occurrenceRecord,
  scheduleAdvance,
  scheduleGetForUpdate,
  scheduleLockDue,
  scheduleSetState,
  type OccurrenceRecord,
  type ScheduleRow,
} from '@sched/store';
import { compileScheduleRecurrence } from '@sched/command-rules';
import type { PartitionRuntime } from './partition-runtime.js';
import { planSchedule } from './schedule-plan.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';

/** Wheel ids of schedule entries: a control character cannot start a (printable) job id. */
export const SCHEDULE_ENTRY_PREFIX = '\u0001s:';
export const scheduleEntryId = (scheduleId: string) => SCHEDULE_ENTRY_PREFIX + scheduleId;

export interface GeneratorOptions {
  misfireThresholdMs: number;
  maxPerPass: number;
  batch: number;
  /** Test hook: SIGKILL this process between generating occurrences and committing the advance. */
  crashAfterGenerate: boolean;
}

export interface GenerationEffects {
  /** dueMs < 0: cancelled. Tenant and priority for the due-time index's fair firing. */
  jobs: { jobId: string; dueMs: number; tenantId?: string; priority?: number }[];
  schedules: { scheduleId: string; nextFireAtMs: number | null }[];
}

/**
 * Generates schedule occurrences: per pass, one fenced transaction locks the due schedules
 * (SKIP LOCKED), records every occurrence's fate in the ledger (idempotent on
 * (schedule, nominal time)), creates the jobs of fired ones (job id = occurrence id, so a replay
 * is a no-op) and advances next_fire_at — all or nothing, so a crash in between neither loses
 * nor doubles an occurrence.
 */
export class ScheduleGenerator {
  private readonly compiled = new Map<string, { key: string; rec: Recurrence }>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly metrics: SchedulerMetrics,
    private readonly log: Logger,
    private readonly o: GeneratorOptions,
  ) {}

  recurrenceOf(s: ScheduleRow): Recurrence {
    const key = `${s.version}|${s.cron}|${s.intervalMs}|${s.timeZone}|${s.startAtMs}|${s.endAtMs}|${s.dstSkippedPolicy}|${s.dstRepeatedPolicy}`;
    const hit = this.compiled.get(s.scheduleId);
    if (hit && hit.key === key) return hit.rec;
    const rec = compileScheduleRecurrence(s);
    this.compiled.set(s.scheduleId, { key, rec });
    return rec;
  }

  /** One generation pass over due schedules of a partition (all, or only `onlyIds`). */
  async runOnce(rt: PartitionRuntime, onlyIds: string[] | null): Promise<GenerationEffects> {
    const effects: GenerationEffects = { jobs: [], schedules: [] };
    await inTransaction(this.pool, async (client) => {
      const fence = await client.query(
        'SELECT 1 FROM partition_owner WHERE partition = $1 AND epoch = $2 FOR KEY SHARE',
        [rt.partition, rt.epoch],
      );
      if (fence.rowCount !== 1) throw new FencedError(rt.partition, rt.epoch, 'schedule_generate');
      const nowMs = Date.now();
      const due = await scheduleLockDue(client, rt.partition, rt.epoch, nowMs, this.o.batch, onlyIds);
      if (due.length === 0) return;
      const prev = await jobStates(
        client,
        due.map((s) => s.lastJobId).filter((x): x is string => x !== null),
      );
      for (const s of due) {
        const st = s.lastJobId ? prev.get(s.lastJobId) : undefined;
        const plan = planSchedule({
          s,
          rec: this.recurrenceOf(s),
          nowMs,
          prevActive: st === 'SCHEDULED' || st === 'DISPATCHED' || st === 'RUNNING',
          misfireThresholdMs: this.o.misfireThresholdMs,
          maxPerPass: this.o.maxPerPass,
        });
        const written = await occurrenceRecord(client, rt.partition, rt.epoch, plan.records);
        const jobs = plan.jobs.filter((j) => written.has(j.jobId));
        await jobCreateBatch(client, rt.partition, rt.epoch, jobs);
        if (plan.cancelJobIds.length > 0) await jobCancel(client, rt.partition, rt.epoch, plan.cancelJobIds);
        if (this.o.crashAfterGenerate) {
          this.log.warn({ scheduleId: s.scheduleId }, 'test hook: SIGKILL between generation and advance');
          // The logger may still hold that line; this one is out before the kill.
          writeSync(2, 'test hook: SIGKILL between generation and advance\n');
          process.kill(process.pid, 'SIGKILL');
        }
        if (!(await scheduleAdvance(client, rt.partition, rt.epoch, plan.advance)))
          throw new FencedError(rt.partition, rt.epoch, 'schedule_advance');
        for (const r of plan.records)
          if (written.has(r.occurrenceId)) this.metrics.occurrences.inc({ fate: r.fate });
        for (const j of jobs)
          effects.jobs.push({ jobId: j.jobId, dueMs: j.dueAtMs, tenantId: j.tenantId, priority: j.priority });
        for (const id of plan.cancelJobIds) effects.jobs.push({ jobId: id, dueMs: -1 });
        const nextMs = plan.advance.bufferedAtMs !== null ? nowMs + 1_000 : plan.advance.nextFireAtMs;
        effects.schedules.push({
          scheduleId: s.scheduleId,
          nextFireAtMs: plan.advance.state === 'ACTIVE' ? nextMs : null,
        });
      }
    });
    return effects;
  }

  /**
   * Resumes paused schedules: occurrences that fell in the pause are recorded PAUSED (not run),
   * and the schedule continues at its next future occurrence. In the caller's transaction.
   */
  async resume(
    client: pg.ClientBase,
    rt: PartitionRuntime,
    scheduleIds: string[],
    nowMs: number,
  ): Promise<GenerationEffects['schedules']> {
    const out: GenerationEffects['schedules'] = [];
    for (const id of scheduleIds) {
      const s = await scheduleGetForUpdate(client, rt.partition, id);
      if (!s || s.state !== 'PAUSED') continue;
      const rec = this.recurrenceOf(s);
      const records: OccurrenceRecord[] = [];
      if (s.nextFireAtMs !== null && s.nextFireAtMs <= nowMs) {
        const { occurrences } = rec.between(s.nextFireAtMs - 1, nowMs, 10_000);
        for (const o of occurrences) {
          records.push({
            scheduleId: id,
            nominalAtMs: o.atMs,
            occurrenceId: occurrenceId(id, o.atMs),
            fate: 'PAUSED',
            jobId: null,
            localWall: o.localWall,
            detail: 'schedule was paused',
          });
        }
      }
      const written = await occurrenceRecord(client, rt.partition, rt.epoch, records);
      this.metrics.occurrences.inc({ fate: 'PAUSED' }, written.size);
      const next =
        s.nextFireAtMs === null || s.nextFireAtMs > nowMs
          ? s.nextFireAtMs
          : (rec.next(nowMs, 1).occurrences[0]?.atMs ?? null);
      await scheduleSetState(
        client,
        rt.partition,
        rt.epoch,
        [id],
        ['PAUSED'],
        'ACTIVE',
        new Map([[id, next]]),
      );
      out.push({ scheduleId: id, nextFireAtMs: next });
    }
    return out;
  }
}
