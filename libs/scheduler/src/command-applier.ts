import type pg from 'pg';
import { fromWirePolicy, type WireRetryPolicy } from '@sched/retry-policy';
import type { Logger } from '@sched/logging';
import type { InboundMessage, MessageProducer } from '@sched/kafka';
import {
  commandMarkApplied,
  commandRecordOutcomes,
  inTransaction,
  jobCancel,
  jobCreateDispatching,
  jobReschedule,
  outboxEmit,
  partitionAdvanceOffset,
  scheduleSetState,
  scheduleUpsert,
  type ClaimedJob,
  type CommandMark,
  type NewJob,
  type OutboxRow,
  type VersionedJob,
} from '@sched/store';
import {
  CommandRejection,
  RejectReason,
  type AttemptResultCommand,
  type CancelJobCommand,
  type CreateJobCommand,
  type RescheduleJobCommand,
  type ScheduleStateCommand,
  type UpsertScheduleCommand,
  type SchedulerCodec,
  type SchedulerCommand,
} from '@sched/command-rules';
import {
  compileScheduleRecurrence,
  jitteredDue,
  validateCommand,
  type KnownNames,
  type ValidationLimits,
} from '@sched/command-rules';
import { FireTags } from './fair-ready.js';
import type { PartitionRuntime } from './partition-runtime.js';
import { dispatchOutboxRow } from './claimer.js';
import { scheduleEntryId, type ScheduleGenerator } from './schedule-generator.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';
import type { PendingCaps } from './tenant-quotas.js';
import { RejectionPublisher, type Rejected } from './rejection-publisher.js';
import { jobEventRow } from './job-events.js';

export interface ApplierDeps {
  pool: pg.Pool;
  codec: SchedulerCodec;
  producer: MessageProducer;
  metrics: SchedulerMetrics;
  log: Logger;
  limits: ValidationLimits;
  names: KnownNames;
  rejectedTopic: string;
  ownerId: string;
  generator: ScheduleGenerator;
  /** Write CANCELLED / RESCHEDULED events to sched.events (through the outbox, same transaction). */
  lifecycleEvents: boolean;
  /**
   * A created job already due is dispatched by the create itself (inserted DISPATCHED with this
   * dispatch lease, its outbox row in the same transaction); null: every job waits for a firing round.
   */
  dispatchOnCreateLeaseMs: number | null;
  /** How many jobs of a queue may be dispatched now (admission control, see `Admission`). */
  roomFor(queue: string): number;
  /** Called with the jobs dispatched by their create (claim metrics). */
  onDispatched(jobs: readonly ClaimedJob[], partition: number): void;
  /** Tenant and priority tags for the due-time index (fair firing in a burst). */
  fireTags: FireTags;
  /** The tenants' pending caps (none: no create is refused for a quota). */
  pendingCaps?: Pick<PendingCaps, 'admit' | 'settle' | 'capOf'>;
}

const UNKNOWN_NAME: ReadonlySet<RejectReason> = new Set([
  RejectReason.UNKNOWN_TENANT,
  RejectReason.UNKNOWN_QUEUE,
]);

const capWhy = (tenantId: string, cap: number | undefined): string =>
  `tenant "${tenantId}" is at its quota of ${cap ?? '?'} pending jobs (tenant.max_pending_jobs): ` +
  'nothing was created; retry once some of its jobs have finished, or raise the quota';

/**
 * Applies one fetched batch of one partition: decode → validate → one fenced transaction for
 * the whole batch (offset + idempotency marks + grouped writes) → index updates → rejected
 * records produced. The consumer commits the Kafka offset only after this resolves, i.e. after
 * the database commit and the rejected records are acknowledged: nothing is lost, and a replay
 * is a no-op (offset watermark and commandId marks).
 */
export class CommandApplier {
  private readonly rejections: RejectionPublisher;

  constructor(private readonly d: ApplierDeps) {
    this.rejections = new RejectionPublisher(d);
  }

  async applyBatch(rt: PartitionRuntime, messages: InboundMessage[]): Promise<void> {
    const fresh = messages.filter((m) => Number(m.offset) > rt.appliedOffset);
    if (fresh.length === 0) return;
    let accepted: SchedulerCommand[] = [];
    /** The record each accepted command came from (for a tenancy rejection). */
    const sourceOf = new Map<SchedulerCommand, InboundMessage>();
    const rejected: Rejected[] = [];
    const nowMs = Date.now();
    for (const msg of fresh) {
      let cmd: SchedulerCommand | undefined;
      try {
        if (!msg.value)
          throw new CommandRejection(RejectReason.UNDECODABLE, 'empty message value (tombstone)');
        cmd = await this.d.codec.decodeCommand(msg.value);
        try {
          validateCommand(cmd, msg.key, nowMs, this.d.limits, this.d.names);
        } catch (err) {
          // A tenant or queue not seen yet may have been created a moment ago: read them again.
          if (!(err instanceof CommandRejection) || !UNKNOWN_NAME.has(err.reason) || !this.d.names.refresh)
            throw err;
          await this.d.names.refresh();
          validateCommand(cmd, msg.key, nowMs, this.d.limits, this.d.names);
        }
        if (cmd.kind === 'Other') {
          throw new CommandRejection(
            RejectReason.UNSUPPORTED_COMMAND,
            `${cmd.type} is not supported by this scheduler version`,
          );
        }
        accepted.push(cmd);
        sourceOf.set(cmd, msg);
      } catch (err) {
        if (!(err instanceof CommandRejection)) throw err;
        rejected.push({ msg, reason: err.reason, message: err.message, cmd });
      }
    }
    // Tenancy (invariant 9): a command acts on its own tenant's jobs and schedules only.
    const refuse = (
      cmds: Iterable<SchedulerCommand>,
      reason: RejectReason,
      why: (c: SchedulerCommand) => string,
    ) => {
      const out = new Set(cmds);
      for (const c of out) rejected.push({ msg: sourceOf.get(c)!, reason, message: why(c), cmd: c });
      accepted = accepted.filter((c) => !out.has(c));
    };
    refuse(await this.foreignTargets(accepted), RejectReason.TENANT_MISMATCH, tenantWhy);
    // Quotas: a create beyond its tenant's pending cap (fleet-wide; `PendingCaps`).
    const caps = this.d.pendingCaps;
    const { over, ticket } = caps ? caps.admit(accepted) : { over: [], ticket: new Map<string, number>() };
    refuse(over, RejectReason.QUOTA_EXCEEDED, (c) => capWhy(c.tenantId, caps?.capOf(c.tenantId)));
    let committed = false;
    try {
      const lastOffset = Number(fresh[fresh.length - 1]!.offset);
      const published = new Set<Rejected>();
      for (;;) {
        // Rejections are published before the offset can advance: if publishing fails, nothing is
        // committed and the batch comes again (a rejected record may then appear twice: at least
        // once, never lost). Publishing after the commit would lose them, as a retry skips applied
        // offsets.
        const toPublish = rejected
          .filter((r) => !published.has(r))
          .sort((a, b) => Number(a.msg.offset) - Number(b.msg.offset));
        if (toPublish.length > 0) await this.rejections.publish(rt, toPublish);
        for (const r of toPublish) published.add(r);
        try {
          const applied = await this.applyTransaction(rt, accepted, lastOffset, rejected);
          committed = true;
          return this.afterCommit(rt, lastOffset, fresh, applied);
        } catch (err) {
          // Found by the statements themselves (the hot path pays no lookup): a create reusing the
          // id of another tenant's job, a reschedule of a running job. Rolled back, refused, and the
          // batch applied again without them.
          if (!(err instanceof RefusedInBatch)) throw err;
          refuse(err.commands, err.reason, err.why);
        }
      }
    } finally {
      caps?.settle(ticket, committed);
    }
  }

  /**
   * Whether a run of creates may dispatch its due jobs itself: every queue has room for all of
   * them (admission control). Otherwise they wait for a firing round, which takes what has room.
   */
  private admits(jobs: readonly NewJob[]): boolean {
    const perQueue = new Map<string, number>();
    for (const j of jobs) perQueue.set(j.queue, (perQueue.get(j.queue) ?? 0) + 1);
    for (const [q, n] of perQueue) if (this.d.roomFor(q) < n) return false;
    return true;
  }

  /**
   * The cancels, reschedules and schedule changes among `cmds` whose job or schedule belongs to
   * another tenant, by Postgres (a job's or schedule's tenant never changes) or by a create or
   * upsert earlier in the same batch.
   */
  private async foreignTargets(cmds: SchedulerCommand[]): Promise<SchedulerCommand[]> {
    const jobIds = new Set<string>();
    const scheduleIds = new Set<string>();
    for (const c of cmds) {
      if (c.kind === 'CancelJob' || c.kind === 'RescheduleJob') jobIds.add(c.jobId);
      else if (c.kind === 'UpsertSchedule' || isScheduleState(c)) scheduleIds.add(c.scheduleId);
    }
    if (jobIds.size === 0 && scheduleIds.size === 0) return [];
    const jobTenant = new Map<string, string>();
    const scheduleTenant = new Map<string, string>();
    if (jobIds.size > 0) {
      const { rows } = await this.d.pool.query<{ id: string; tenant_id: string }>(
        'SELECT job_id AS id, tenant_id FROM job WHERE job_id = ANY($1::text[])',
        [[...jobIds]],
      );
      for (const r of rows) jobTenant.set(r.id, r.tenant_id);
    }
    if (scheduleIds.size > 0) {
      const { rows } = await this.d.pool.query<{ id: string; tenant_id: string }>(
        'SELECT schedule_id AS id, tenant_id FROM schedule WHERE schedule_id = ANY($1::text[])',
        [[...scheduleIds]],
      );
      for (const r of rows) scheduleTenant.set(r.id, r.tenant_id);
    }
    const foreign: SchedulerCommand[] = [];
    for (const c of cmds) {
      if (c.kind === 'CreateJob') {
        if (jobIds.has(c.jobId) && !jobTenant.has(c.jobId)) jobTenant.set(c.jobId, c.tenantId);
      } else if (c.kind === 'CancelJob' || c.kind === 'RescheduleJob') {
        const owner = jobTenant.get(c.jobId);
        if (owner !== undefined && owner !== c.tenantId) foreign.push(c);
      } else if (c.kind === 'UpsertSchedule' || isScheduleState(c)) {
        const owner = scheduleTenant.get(c.scheduleId);
        if (owner !== undefined && owner !== c.tenantId) foreign.push(c);
        else if (owner === undefined && c.kind === 'UpsertSchedule')
          scheduleTenant.set(c.scheduleId, c.tenantId);
      }
    }
    return foreign;
  }

  private async applyTransaction(
    rt: PartitionRuntime,
    accepted: SchedulerCommand[],
    lastOffset: number,
    rejected: readonly Rejected[],
  ) {
    return inTransaction(this.d.pool, async (client) => {
      // Row-locks the ownership row for the whole transaction and checks the epoch.
      await partitionAdvanceOffset(client, rt.partition, rt.epoch, lastOffset);
      // Every command is marked by its id (idempotence, and its status: GET /v1/commands/:id).
      const firstTime = await commandMarkApplied(client, rt.partition, rt.epoch, accepted.map(markOf));
      // Apply a commandId once: not if an earlier batch applied it, nor twice within this batch.
      const fresh: SchedulerCommand[] = [];
      for (const c of accepted) {
        if (firstTime.delete(c.commandId)) fresh.push(c);
        else this.d.metrics.commandsDuplicate.inc({ type: c.kind });
      }
      const out = await this.applyRuns(client, rt, fresh);
      await commandRecordOutcomes(client, rt.partition, [
        ...out.noops.map(({ cmd, detail }) => ({ ...markOf(cmd), outcome: 'no-op' as const, detail })),
        ...rejected
          .filter((r) => r.cmd !== undefined)
          .map((r) => ({
            ...markOf(r.cmd!),
            outcome: 'rejected' as const,
            detail: `${r.reason}: ${r.message}`,
          })),
      ]);
      return out;
    });
  }

  private afterCommit(
    rt: PartitionRuntime,
    lastOffset: number,
    fresh: InboundMessage[],
    { effects, dispatched }: Awaited<ReturnType<CommandApplier['applyTransaction']>>,
  ): void {
    rt.appliedOffset = lastOffset;
    const committedMs = Date.now();
    for (const m of fresh) {
      if (m.timestampMs > 0)
        this.d.metrics.commandApplyLag.observe(Math.max(0, committedMs - m.timestampMs) / 1000);
    }
    this.d.onDispatched(dispatched, rt.partition);

    // Index updates after commit: the index only ever mirrors committed state.
    for (const e of effects) {
      if (e.dueMs === null || e.dueMs < 0) rt.forget(e.jobId);
      else if (e.dueMs < rt.loadedUntilMs) rt.place(e.jobId, e.dueMs, e.tag);
      else rt.forget(e.jobId);
    }
  }

  /** Applies consecutive runs of the same command type as one statement each, keeping order. */
  private async applyRuns(client: pg.ClientBase, rt: PartitionRuntime, cmds: SchedulerCommand[]) {
    // `tag`: the job's tenant and priority class (FireTags), read from the command or the row.
    const effects: { jobId: string; dueMs: number | null; tag?: number }[] = [];
    const outbox: OutboxRow[] = [];
    const dispatchedNow: ClaimedJob[] = [];
    /** Commands that changed nothing, and why (their status). */
    const noops: { cmd: SchedulerCommand; detail: string }[] = [];
    const event = (
      type: 'CANCELLED' | 'RESCHEDULED',
      j: VersionedJob,
      detail: string | null,
      callerId: string | null,
    ) => {
      if (!this.d.lifecycleEvents) return;
      outbox.push(
        jobEventRow(this.d.codec, {
          jobId: j.jobId,
          tenantId: j.tenantId,
          type,
          version: j.version,
          attempt: j.attempt,
          detail,
          callerId,
        }),
      );
    };
    let i = 0;
    while (i < cmds.length) {
      const kind = cmds[i]!.kind;
      let j = i;
      while (j < cmds.length && cmds[j]!.kind === kind) j++;
      const run = cmds.slice(i, j);
      i = j;
      switch (kind) {
        case 'CreateJob': {
          // Duplicate job ids within one run: keep the first (the later ones are no-ops anyway,
          // or refused when another tenant sent them).
          const seen = new Map<string, string>(); // job id → tenant of its first create
          const jobs: NewJob[] = [];
          const firsts = new Set<CreateJobCommand>();
          const foreign: CreateJobCommand[] = [];
          for (const c of run as CreateJobCommand[]) {
            const first = seen.get(c.jobId);
            if (first !== undefined) {
              if (first !== c.tenantId) foreign.push(c);
              continue;
            }
            seen.set(c.jobId, c.tenantId);
            firsts.add(c);
            jobs.push(toNewJob(c));
          }
          // The dispatching statement only when some job is due, or about to be (the database's
          // clock decides; a second of margin covers a skew between the two clocks).
          // Never while the partition's takeover hold lasts: a cancel further on in the backlog
          // must find the job not dispatched yet.
          const soon = Date.now() + 1_000;
          const { created, dispatched } = await jobCreateDispatching(
            client,
            rt.partition,
            rt.epoch,
            jobs,
            !rt.held && jobs.some((j) => j.dueAtMs <= soon) && this.admits(jobs)
              ? this.d.dispatchOnCreateLeaseMs
              : null,
          );
          // An id that was taken already: refused when another tenant holds it (rolled back and
          // applied again without it, see applyBatch). Only such ids are looked up.
          const taken = jobs.filter((j) => !created.has(j.jobId)).map((j) => j.jobId);
          if (taken.length > 0) {
            const { rows } = await client.query<{ job_id: string; tenant_id: string }>(
              'SELECT job_id, tenant_id FROM job WHERE job_id = ANY($1::text[])',
              [taken],
            );
            const holder = new Map(rows.map((r) => [r.job_id, r.tenant_id]));
            for (const c of run as CreateJobCommand[]) {
              const t = holder.get(c.jobId);
              if (t !== undefined && t !== c.tenantId) foreign.push(c);
            }
          }
          if (foreign.length > 0)
            throw new RefusedInBatch(foreign, RejectReason.TENANT_MISMATCH, (c) => tenantWhy(c));
          // Already due: dispatched by the create, never in the index.
          const gone = new Set(dispatched.map((d) => d.jobId));
          for (const job of jobs) {
            if (created.has(job.jobId) && !gone.has(job.jobId))
              effects.push({
                jobId: job.jobId,
                dueMs: job.dueAtMs,
                tag: this.d.fireTags.tag(job.tenantId, job.priority),
              });
          }
          // Their outbox rows go with the events' in one insert at the end of this transaction.
          for (const d of dispatched) outbox.push(dispatchOutboxRow(this.d.codec, d, rt.partition, rt.epoch));
          dispatchedNow.push(...dispatched);
          for (const c of run as CreateJobCommand[])
            if (!firsts.has(c) || !created.has(c.jobId))
              noops.push({
                cmd: c,
                detail: `job ${c.jobId} exists already: a create is applied once per job id`,
              });
          this.d.metrics.commandsApplied.inc({ type: kind }, created.size);
          this.d.metrics.commandsNoop.inc({ type: kind }, run.length - created.size);
          break;
        }
        case 'CancelJob': {
          const done = await jobCancel(
            client,
            rt.partition,
            rt.epoch,
            (run as CancelJobCommand[]).map((c) => c.jobId),
          );
          const byJob = new Map((run as CancelJobCommand[]).map((c) => [c.jobId, c]));
          for (const d of done) {
            effects.push({ jobId: d.jobId, dueMs: null });
            const c = byJob.get(d.jobId);
            event('CANCELLED', d, c?.reason ?? null, c?.callerId ?? null);
          }
          const cancelled = new Set(done.map((d) => d.jobId));
          const left = (run as CancelJobCommand[]).filter((c) => !cancelled.has(c.jobId));
          if (left.length > 0) {
            const rows = await jobRows(
              client,
              left.map((c) => c.jobId),
            );
            for (const c of left) {
              const r = rows.get(c.jobId);
              noops.push({
                cmd: c,
                detail: r ? `job ${c.jobId} is ${r.state} already` : `no job ${c.jobId}`,
              });
            }
          }
          this.d.metrics.commandsApplied.inc({ type: kind }, done.length);
          this.d.metrics.commandsNoop.inc({ type: kind }, run.length - done.length);
          break;
        }
        case 'RescheduleJob': {
          // Within one statement a job may appear once; apply in sub-runs of distinct ids.
          let rest = run as RescheduleJobCommand[];
          while (rest.length > 0) {
            const ids = new Set<string>();
            const now: RescheduleJobCommand[] = [];
            const later: RescheduleJobCommand[] = [];
            for (const c of rest) {
              if (ids.has(c.jobId)) later.push(c);
              else now.push(c);
              ids.add(c.jobId);
            }
            const nowById = new Map(now.map((c) => [c.jobId, c]));
            const done = await jobReschedule(
              client,
              rt.partition,
              rt.epoch,
              now.map((c) => ({ jobId: c.jobId, dueAtMs: c.dueAtMs, expectedVersion: c.expectedVersion })),
            );
            // A job a worker is running is not moved (the run would go on): refused, not a no-op.
            const moved = new Set(done.map((d) => d.jobId));
            const notMoved = now.filter((c) => !moved.has(c.jobId)).map((c) => c.jobId);
            if (notMoved.length > 0) {
              const { rows } = await client.query<{ job_id: string }>(
                "SELECT job_id FROM job WHERE job_id = ANY($1::text[]) AND state = 'RUNNING'",
                [notMoved],
              );
              const running = new Set(rows.map((r) => r.job_id));
              const refused = now.filter((c) => running.has(c.jobId));
              if (refused.length > 0)
                throw new RefusedInBatch(
                  refused,
                  RejectReason.JOB_RUNNING,
                  (c) =>
                    `RescheduleJob ${(c as RescheduleJobCommand).jobId}: a worker is running it; cancel it, or reschedule once the run has ended`,
                );
            }
            if (notMoved.length > 0) {
              const rows = await jobRows(client, notMoved);
              for (const c of now)
                if (!moved.has(c.jobId)) {
                  const r = rows.get(c.jobId);
                  noops.push({
                    cmd: c,
                    detail: !r
                      ? `no job ${c.jobId}`
                      : c.expectedVersion !== null && c.expectedVersion !== r.version
                        ? `job ${c.jobId} is at version ${r.version}, not the expected ${c.expectedVersion}`
                        : `job ${c.jobId} is ${r.state}: only a job not started yet is rescheduled`,
                  });
                }
            }
            for (const d of done) {
              effects.push({
                jobId: d.jobId,
                dueMs: d.dueAtMs,
                tag: this.d.fireTags.tag(d.tenantId, d.priority),
              });
              const c = nowById.get(d.jobId);
              event('RESCHEDULED', d, `due ${new Date(d.dueAtMs).toISOString()}`, c?.callerId ?? null);
            }
            this.d.metrics.commandsApplied.inc({ type: kind }, done.length);
            this.d.metrics.commandsNoop.inc({ type: kind }, now.length - done.length);
            rest = later;
          }
          break;
        }
        case 'AttemptResult': {
          // The worker wrote the outcome; index the jobs that are SCHEDULED again (retries).
          const ids = (run as AttemptResultCommand[]).map((c) => c.jobId);
          const { rows } = await client.query<{
            job_id: string;
            due_ms: number;
            tenant_id: string;
            priority: number;
          }>(
            `SELECT job_id, floor(extract(epoch FROM due_at) * 1000)::float8 AS due_ms, tenant_id, priority
             FROM job WHERE job_id = ANY($1::text[]) AND partition = $2 AND state = 'SCHEDULED'`,
            [ids, rt.partition],
          );
          for (const r of rows)
            effects.push({
              jobId: r.job_id,
              dueMs: r.due_ms,
              tag: this.d.fireTags.tag(r.tenant_id, r.priority),
            });
          this.d.metrics.commandsApplied.inc({ type: kind }, run.length);
          break;
        }
        case 'UpsertSchedule': {
          const nowMs = Date.now();
          for (const c of run as UpsertScheduleCommand[]) {
            const rec = compileScheduleRecurrence(c);
            const next = rec.next(nowMs - 1, 1).occurrences[0]?.atMs ?? null;
            const version = await scheduleUpsert(
              client,
              rt.partition,
              rt.epoch,
              {
                scheduleId: c.scheduleId,
                tenantId: c.tenantId,
                queue: c.queue,
                payload: c.payload,
                priority: c.priority,
                headers: c.headers,
                maxAttempts: c.maxAttempts,
                executionTimeoutMs: c.executionTimeoutMs,
                retryPolicy: c.retryPolicy ? fromWirePolicy(c.retryPolicy as WireRetryPolicy) : null,
                cron: c.cron,
                intervalMs: c.intervalMs,
                timeZone: c.timeZone,
                startAtMs: c.startAtMs,
                endAtMs: c.endAtMs,
                maxRuns: c.maxRuns,
                nextFireAtMs: next,
                misfirePolicy: c.misfirePolicy,
                misfireFireAllCap: c.misfireFireAllCap,
                misfireDeadlineMs: c.misfireDeadlineMs,
                overlapPolicy: c.overlapPolicy,
                dstSkippedPolicy: c.dstSkippedPolicy,
                dstRepeatedPolicy: c.dstRepeatedPolicy,
                jitterWindowMs: c.jitterWindowMs,
              },
              c.expectedVersion,
            );
            if (version === null) {
              noops.push({
                cmd: c,
                detail: `schedule ${c.scheduleId} is not at the expected version ${c.expectedVersion ?? ''}, or deleted`,
              });
              this.d.metrics.commandsNoop.inc({ type: kind });
              continue;
            }
            effects.push({ jobId: scheduleEntryId(c.scheduleId), dueMs: next, tag: FireTags.FIRST });
            this.d.metrics.commandsApplied.inc({ type: kind });
          }
          break;
        }
        case 'PauseSchedule':
        case 'DeleteSchedule': {
          const ids = (run as ScheduleStateCommand[]).map((c) => c.scheduleId);
          const done =
            kind === 'PauseSchedule'
              ? await scheduleSetState(client, rt.partition, rt.epoch, ids, ['ACTIVE'], 'PAUSED')
              : await scheduleSetState(
                  client,
                  rt.partition,
                  rt.epoch,
                  ids,
                  ['ACTIVE', 'PAUSED', 'COMPLETED'],
                  'DELETED',
                );
          for (const id of done) effects.push({ jobId: scheduleEntryId(id), dueMs: null });
          const changed = new Set(done);
          noops.push(
            ...(run as ScheduleStateCommand[])
              .filter((c) => !changed.has(c.scheduleId))
              .map((c) => ({ cmd: c, detail: scheduleNoop(c) })),
          );
          this.d.metrics.commandsApplied.inc({ type: kind }, done.length);
          this.d.metrics.commandsNoop.inc({ type: kind }, ids.length - done.length);
          break;
        }
        case 'ResumeSchedule': {
          const ids = (run as ScheduleStateCommand[]).map((c) => c.scheduleId);
          const resumed = await this.d.generator.resume(client, rt, ids, Date.now());
          for (const r of resumed)
            effects.push({
              jobId: scheduleEntryId(r.scheduleId),
              dueMs: r.nextFireAtMs,
              tag: FireTags.FIRST,
            });
          const back = new Set(resumed.map((r) => r.scheduleId));
          noops.push(
            ...(run as ScheduleStateCommand[])
              .filter((c) => !back.has(c.scheduleId))
              .map((c) => ({ cmd: c, detail: scheduleNoop(c) })),
          );
          this.d.metrics.commandsApplied.inc({ type: kind }, resumed.length);
          this.d.metrics.commandsNoop.inc({ type: kind }, ids.length - resumed.length);
          break;
        }
        case 'Other':
          break;
      }
    }
    // The ownership row is locked by this transaction (partitionAdvanceOffset): the epoch holds.
    await outboxEmit(client, rt.partition, rt.epoch, outbox);
    return { effects, dispatched: dispatchedNow, noops };
  }
}

/**
 * Commands of a batch its transaction found it must refuse (a create reusing another tenant's job
 * id, a reschedule of a running job): thrown to roll the batch back, which is then applied again
 * without them after their rejections are published.
 */
class RefusedInBatch extends Error {
  constructor(
    readonly commands: SchedulerCommand[],
    readonly reason: RejectReason,
    readonly why: (c: SchedulerCommand) => string,
  ) {
    super(`${commands.length} commands refused: ${reason}`);
  }
}

const tenantWhy = (c: SchedulerCommand): string => {
  const id = 'jobId' in c ? c.jobId : 'scheduleId' in c ? c.scheduleId : '';
  return `${c.kind} ${id} names a job or schedule of another tenant than ${c.tenantId}`;
};

/** The mark of a command: its id, tenant, kind and the job or schedule it names. */
const markOf = (c: SchedulerCommand): CommandMark => ({
  commandId: c.commandId,
  tenantId: c.tenantId,
  kind: c.kind === 'Other' ? c.type : c.kind,
  entityId: c.kind === 'Other' ? c.entityId : 'scheduleId' in c ? c.scheduleId : c.jobId,
});

const scheduleNoop = (c: ScheduleStateCommand): string =>
  `schedule ${c.scheduleId} does not exist or is not in a state ${c.kind} changes`;

/** State and version of jobs, for the status of a command that changed nothing. */
async function jobRows(
  client: pg.ClientBase,
  ids: string[],
): Promise<Map<string, { state: string; version: number }>> {
  const { rows } = await client.query<{ job_id: string; state: string; version: number }>(
    'SELECT job_id, state, version FROM job WHERE job_id = ANY($1::text[])',
    [ids],
  );
  return new Map(rows.map((r) => [r.job_id, { state: r.state, version: r.version }]));
}

const isScheduleState = (c: SchedulerCommand): c is ScheduleStateCommand =>
  c.kind === 'PauseSchedule' || c.kind === 'ResumeSchedule' || c.kind === 'DeleteSchedule';

function toNewJob(c: CreateJobCommand): NewJob {
  return {
    jobId: c.jobId,
    tenantId: c.tenantId,
    queue: c.queue,
    dueAtMs: jitteredDue(c.jobId, c.dueAtMs, c.jitterWindowMs),
    priority: c.priority,
    payload: c.payload,
    businessKey: c.businessKey,
    maxAttempts: c.maxAttempts,
    retryPolicy: c.retryPolicy ? fromWirePolicy(c.retryPolicy as WireRetryPolicy) : null,
    expiresAtMs: c.expiresAtMs,
    executionTimeoutMs: c.executionTimeoutMs,
    headers: c.headers,
  };
}
