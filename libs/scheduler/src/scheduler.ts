import type pg from 'pg';
import type { Logger } from '@sched/logging';
import {
  negotiatedSessionTimeout,
  type GroupConsumer,
  type KafkaAdminPort,
  type KafkaPort,
  type MessageProducer,
} from '@sched/kafka';
import {
  commandTopicLayout,
  DEFAULT_REAP_BUDGET,
  jobExpireDue,
  leaseReap,
  outboxEmit,
  outboxSlotState,
  homeRegion,
  inTransaction,
  NotHomeRegionError,
  workersGone,
} from '@sched/store';
import { Claimer } from './claimer.js';
import { FiringDriver } from './firing-driver.js';
import { DispatchObserver } from './dispatch-observer.js';
import { CommandApplier } from './command-applier.js';
import type { SchedulerCodec } from '@sched/command-rules';
import type { KnownNames } from '@sched/command-rules';
import type { SchedulerConfig } from './config.js';
import type { DueIndex } from './due-index.js';
import type { PartitionRuntime } from './partition-runtime.js';
import { PartitionOwnership } from './partition-ownership.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';
import { ScheduleGenerator, scheduleEntryId, type GenerationEffects } from './schedule-generator.js';
import { FireTags } from './fair-ready.js';
import { GoneWorkers } from './gone-workers.js';
import { Reconciler } from './reconciler.js';
import { Admission } from './admission.js';
import { PendingCaps } from './tenant-quotas.js';
import { jobEventRow } from './job-events.js';
import { retentionSweep } from './retention-sweep.js';

/** The reaper's log line for a job it dead-lettered, by failure class. */
const DEAD_BY_REAPER = {
  LEASE_LOST:
    'job dead-lettered: its lease was lost on the last attempt of its budget (a poison job, or workers dying)',
  TIMEOUT: 'job dead-lettered: it ran past its execution timeout on the last attempt of its budget',
  NEVER_STARTED: 'job dead-lettered: dispatched again and again, never started by a worker',
} as const;

/** How often a running scheduler reads the home region (`checkHomeRegionOnce`). */
const HOME_REGION_CHECK_MS = 2_000;

export interface SchedulerDeps {
  config: SchedulerConfig;
  pool: pg.Pool;
  /** For the wheel's firing rounds only (see `Claimer`); default `pool`. */
  firePool?: pg.Pool;
  kafka: KafkaPort;
  codec: SchedulerCodec;
  names: KnownNames;
  metrics: SchedulerMetrics;
  log: Logger;
  newIndex: () => DueIndex;
}

/**
 * One scheduler process: a member of the command topic's consumer group. Each assigned partition
 * is a shard it owns under a fresh epoch; it keeps that shard's due-time index, fires due jobs
 * through claim + outbox, and runs the reconciliation, lease-reaper, horizon and prune loops.
 * Every loop has a run-once entry point for tests.
 */
export class Scheduler {
  private readonly owner: PartitionOwnership;
  private consumer: GroupConsumer | null = null;
  private producer: MessageProducer | null = null;
  /** Reads the command topic's end offsets for the takeover hold (opened at start). */
  private admin: KafkaAdminPort | null = null;
  private applier: CommandApplier | null = null;
  private readonly admission: Admission;
  /** The tenants' pending caps, fleet-wide (`tenant.max_pending_jobs`). */
  private readonly pendingCaps: PendingCaps;
  /** The command topic's partition count (read at start; admission shares are by it). */
  private topicPartitions = 1;
  private readonly claimer: Claimer;
  private readonly generator: ScheduleGenerator;
  private readonly reconciler: Reconciler;
  private readonly firing: FiringDriver;
  /** One numbering of tenants for every owned partition's index. */
  private readonly fireTags = new FireTags();
  /** Gone worker processes whose running jobs the reaper still looks for, per partition. */
  private readonly goneWorkers = new GoneWorkers();
  private readonly loops: NodeJS.Timeout[] = [];
  private stopping = false;
  private observer: DispatchObserver | null = null;
  private onDemoted: ((err: NotHomeRegionError) => void) | undefined;
  /**
   * Resolves when a partition claim was refused because another region is home now
   * (`sched region promote`): every partition has been let go of; the caller stops this scheduler
   * and stands by until its region is home again.
   */
  readonly demoted = new Promise<NotHomeRegionError>((resolve) => (this.onDemoted = resolve));

  constructor(private readonly d: SchedulerDeps) {
    this.claimer = new Claimer(d.pool, d.codec, d.metrics, d.config.dispatchLeaseMs, d.firePool, {
      limits: () => this.admission.limits(),
      full: () => this.admission.full(),
      onClaimed: (jobs) => this.admission.onClaimed(jobs),
    });
    this.generator = new ScheduleGenerator(d.pool, d.metrics, d.log, {
      misfireThresholdMs: d.config.misfireThresholdMs,
      maxPerPass: 1_000,
      batch: 100,
      crashAfterGenerate: d.config.testCrashAfterGenerate,
    });
    this.owner = new PartitionOwnership({
      config: d.config,
      pool: d.pool,
      metrics: d.metrics,
      log: d.log,
      newIndex: d.newIndex,
      fireTags: this.fireTags,
      arm: (force) => this.firing.arm(force),
      demote: (err) => this.demote(err),
      released: () => this.reconciler.forgetBacklogCounts(),
      stopping: () => this.stopping,
      endOffsets: () => {
        if (!this.admin) return Promise.reject(new Error('the Kafka admin client is not open'));
        return this.admin.endOffsets(d.config.commandsTopic);
      },
    });
    // Fleet-wide limits are shared by owned partitions out of the command topic's.
    const shares = {
      owned: () =>
        this.owner
          .all()
          .filter((r) => !r.closed)
          .map((r) => r.partition),
      totalPartitions: () => this.topicPartitions,
    };
    this.admission = new Admission({
      pool: d.pool,
      metrics: d.metrics,
      log: d.log,
      maxUnstarted: d.config.queueMaxUnstarted,
      claimBatchSize: d.config.claimBatchSize,
      rateBurstMs: Math.max(1_000, d.config.reconcileEveryMs),
      ...shares,
    });
    this.pendingCaps = new PendingCaps({
      pool: d.pool,
      log: d.log,
      everyMs: d.config.admissionEveryMs,
      ...shares,
    });
    this.reconciler = new Reconciler({
      pool: d.pool,
      config: d.config,
      metrics: d.metrics,
      log: d.log,
      claimer: this.claimer,
      fireTags: this.fireTags,
      runtimes: () => this.owner.all(),
      runtime: (p) => this.owner.get(p),
      release: (rt) => this.owner.release(rt.partition, 'fenced', rt),
      assigning: () => this.owner.isAssigning(),
      stopping: () => this.stopping,
      expire: (rts) => this.expireOnce(rts),
    });
    d.metrics.setWheelSizeSource(() =>
      this.owner
        .all()
        .filter((r) => r.owning) // a revoked one is its new owner's to report
        .map((r) => [r.partition, r.index.size + r.ready.size] as const),
    );
    this.firing = new FiringDriver({
      config: d.config,
      claimer: this.claimer,
      generator: this.generator,
      metrics: d.metrics,
      log: d.log,
      runtimes: () => this.owner.all(),
      release: (rt, why) => this.owner.release(rt.partition, why, rt),
      applyGeneration: (rt, fx) => this.applyGeneration(rt, fx),
    });
  }

  async start(): Promise<void> {
    const c = this.d.config;
    this.producer = await this.d.kafka.producer({
      idempotent: true,
      onRecovery: (kind, error) => this.d.metrics.producerRecoveries.inc({ kind, error }),
    });
    this.admin = await this.d.kafka.admin();
    await this.checkTopicLayout(this.admin);
    // An optimisation: a scheduler that could not warm its connections still starts.
    await this.claimer
      .warm(c.claimConcurrency)
      .catch((err: unknown) => this.d.log.warn({ err }, 'firing connections not warmed'));
    this.applier = new CommandApplier({
      pool: this.d.pool,
      codec: this.d.codec,
      producer: this.producer,
      metrics: this.d.metrics,
      log: this.d.log,
      limits: c,
      names: this.d.names,
      rejectedTopic: c.rejectedTopic,
      ownerId: c.ownerId,
      generator: this.generator,
      lifecycleEvents: c.lifecycleEvents,
      dispatchOnCreateLeaseMs: c.dispatchOnCreate ? c.dispatchLeaseMs : null,
      roomFor: (q) => this.admission.roomFor(q),
      onDispatched: (jobs, partition) => {
        this.admission.onClaimed(jobs);
        this.claimer.observe(jobs, 'create', partition);
      },
      fireTags: this.fireTags,
      pendingCaps: this.pendingCaps,
    });
    // Before the first batch: a capped tenant's creates are counted from the start.
    await this.pendingCaps
      .once()
      .catch((err: unknown) => this.d.log.warn({ err }, 'pending caps not read yet (next pass)'));
    const sessionMs = await negotiatedSessionTimeout(
      this.d.kafka,
      c.sessionTimeoutMs,
      'SCHED_SESSION_TIMEOUT_MS',
      this.d.log,
    );
    // Long enough for the new owner to join and claim; a partition nobody claims stops after it.
    this.owner.lingerMs = Math.min(sessionMs, 10_000);
    this.consumer = this.d.kafka.groupConsumer(
      {
        groupId: c.groupId,
        topics: [c.commandsTopic],
        sessionTimeoutMs: sessionMs,
        heartbeatIntervalMs: c.heartbeatIntervalMs,
        rebalanceTimeoutMs: Math.max(sessionMs, 10_000),
        maxWaitTimeMs: c.fetchMaxWaitMs,
        commitIntervalMs: c.commitIntervalMs,
        partitionsConsumedConcurrently: c.applyConcurrency,
      },
      {
        onAssigned: (_topic, partitions) => this.owner.onAssigned(partitions),
        onRevoked: async (_topic, partitions) => this.owner.onRevoked(partitions),
        // A partition given up on a fence is not claimed at the next rebalance, and set up again
        // (fresh epoch, wheel reloaded) if the group gives it back.
        holds: (_topic, partition) => this.owner.holds(partition),
        onBatch: async (batch) => {
          const rt = this.owner.get(batch.partition);
          if (!rt || rt.closed)
            throw new Error(`partition ${batch.partition} is not owned here; batch will be refetched`);
          await rt
            .serial(() => this.applier!.applyBatch(rt, batch.messages))
            .catch((err: unknown) => this.owner.onFenced(rt, err));
          this.owner.applied(rt, batch.highWatermark);
          this.firing.arm();
        },
      },
    );
    const consumer = this.consumer;
    this.d.metrics.consumerRestarts.setSource(() => consumer.restarts());
    await this.consumer.start();
    this.every(c.reconcileEveryMs, () => this.reconcileOnce(), true);
    this.every(c.reapEveryMs, () => this.reapOnce());
    this.every(c.admissionEveryMs, () => this.admission.once());
    this.every(c.admissionEveryMs, () => this.pendingCaps.once());
    this.every(c.horizonExtendEveryMs, () => this.extendHorizonOnce());
    this.every(c.pruneEveryMs, () => this.pruneOnce());
    this.every(c.generateEveryMs, () => this.generateOnce());
    this.every(HOME_REGION_CHECK_MS, () => this.checkHomeRegionOnce());
    if (c.slotCheckEveryMs > 0) {
      void this.checkSlotOnce().catch(() => undefined);
      this.every(c.slotCheckEveryMs, () => this.checkSlotOnce());
    }
    if (c.observeDispatch) {
      this.observer = new DispatchObserver(
        this.d.kafka,
        this.d.pool,
        (v) => this.d.codec.dispatchClaimedAt(v),
        this.d.metrics,
        this.d.log,
        `${c.groupId}.observer.${c.ownerId}`,
        c.observeDispatchEveryMs,
      );
      await this.observer
        .start()
        .catch((err: unknown) => this.d.log.warn({ err }, 'dispatch observer not started'));
    }
  }

  /**
   * Refuses to run when the command topic's partition count is not the one the jobs were placed
   * with (recorded at the first start, migration 018): with partitions added, commands for
   * existing jobs would reach owners that do not hold them, and cancels and reschedules would be
   * lost without a word.
   */
  private async checkTopicLayout(admin: KafkaAdminPort): Promise<void> {
    const topic = this.d.config.commandsTopic;
    const now = await admin.partitionCount(topic);
    if (now <= 0) return; // the consumer reports a missing topic itself
    const { recorded, recordedAtMs } = await commandTopicLayout(this.d.pool, topic, now);
    this.topicPartitions = now;
    this.d.metrics.commandTopicPartitions.set(recorded);
    if (recorded === now) return;
    throw Object.assign(
      new Error(
        `${topic} has ${now} partitions, but its jobs were placed for ${recorded} (recorded ${new Date(recordedAtMs).toISOString()}): ` +
          'commands for existing jobs would reach partitions that do not hold them, and their cancels and reschedules would be lost. ' +
          'Give the topic its recorded partition count back (or move to a new topic and database schema); see "Partitions are balanced by count" in docs/architecture.md',
      ),
      { code: 'SCHED_E_PARTITIONS_CHANGED' },
    );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.loops) clearInterval(t);
    this.firing.stop();
    await this.observer?.stop();
    await this.consumer?.stop();
    await this.producer?.disconnect();
    await this.admin?.disconnect().catch(() => undefined);
  }

  /**
   * Demotes this scheduler when another region is home (or one is set and this scheduler has
   * none): a promotion fences its writes at once, and this makes it let go and stand by within a
   * few seconds even when it has no write to be refused or no partition to take up again.
   */
  async checkHomeRegionOnce(): Promise<void> {
    const home = await homeRegion(this.d.pool);
    const mine = this.d.config.region;
    if (home && home.region !== mine) this.demote(new NotHomeRegionError(mine || undefined, home.region));
  }

  private demote(err: NotHomeRegionError): void {
    if (!this.onDemoted) return;
    this.d.log.error(
      { err, home: err.home, region: err.region },
      'another region is home now: letting every partition go',
    );
    this.owner.releaseAll('not home region');
    this.onDemoted(err);
    this.onDemoted = undefined;
  }

  /** Owned partitions and their epochs (tests, admin). */
  ownership(): { partition: number; epoch: number; wheelSize: number }[] {
    return this.owner.owned();
  }

  // --- maintenance loops (each also callable once) --------------------------------------------

  /**
   * Marks EXPIRED, with their EXPIRED events in the same transaction, the overdue jobs of these
   * partitions whose `expiresAtMs` passed before any claim dispatched them (every claim leaves
   * such a job alone). Part of each reconcile round. Returns how many.
   */
  async expireOnce(rts: PartitionRuntime[] = this.owner.all()): Promise<number> {
    const live = rts.filter((r) => !r.closed);
    if (live.length === 0) return 0;
    const c = this.d.config;
    const expired = await inTransaction(this.d.pool, async (client) => {
      const rows = await jobExpireDue(
        client,
        live.map((r) => ({ partition: r.partition, epoch: r.epoch })),
        c.claimBatchSize,
      );
      if (rows.length > 0 && c.lifecycleEvents) {
        const byPartition = new Map<number, typeof rows>();
        for (const r of rows) byPartition.set(r.partition, [...(byPartition.get(r.partition) ?? []), r]);
        for (const [partition, list] of byPartition) {
          await outboxEmit(
            client,
            partition,
            list[0]!.epoch,
            list.map((j) =>
              jobEventRow(this.d.codec, {
                jobId: j.jobId,
                tenantId: j.tenantId,
                type: 'EXPIRED',
                version: j.version,
                attempt: j.attempt,
                detail: 'not dispatched before its expiresAt',
                callerId: null,
              }),
            ),
          );
        }
      }
      return rows;
    });
    for (const j of expired) {
      this.owner.get(j.partition)?.forget(j.jobId);
      this.d.metrics.jobsExpired.inc({ queue: j.queue });
    }
    if (expired.length > 0)
      this.d.log.info({ jobs: expired.length }, 'jobs expired: not dispatched before their expiresAt');
    return expired.length;
  }

  /** One reconcile round: catch-up drain and backlog gauges (see `Reconciler`). Returns how many it claimed. */
  reconcileOnce(): Promise<number> {
    return this.reconciler.once();
  }

  /**
   * Returns expired leases to SCHEDULED (or DEAD), per owned partition, and the RUNNING jobs of
   * worker processes that are gone by their liveness rows (see `GoneWorkers`). Returns how many.
   */
  async reapOnce(): Promise<number> {
    const c = this.d.config;
    let livenessRead = false;
    if (c.workerGoneWindowMs > 0 && this.owner.all().length > 0) {
      try {
        this.goneWorkers.update(await workersGone(this.d.pool, c.workerGoneWindowMs));
        livenessRead = true;
      } catch (err) {
        // Leases still expire on their own: this pass reaps those only, and keeps what was swept.
        this.d.log.warn({ err }, 'could not read worker liveness; reaping expired leases only');
      }
      this.d.metrics.workersGone.set(this.goneWorkers.count);
    }
    let total = 0;
    for (const rt of this.owner.all()) {
      if (rt.closed) continue;
      try {
        const gone = livenessRead ? this.goneWorkers.toSweep(rt.partition, rt.epoch) : [];
        const reaped = await inTransaction(this.d.pool, async (client) => {
          const rows = await leaseReap(
            client,
            rt.partition,
            rt.epoch,
            c.claimBatchSize,
            c.reapSkewMarginMs,
            gone,
            {
              maxAttempts: c.defaultMaxAttempts,
              maxUnstartedDispatches: c.maxUnstartedDispatches,
              poisonAfterReplays: DEFAULT_REAP_BUDGET.poisonAfterReplays,
            },
          );
          // A job the reaper dead-lettered gets its DEAD_LETTERED event in the same transaction.
          const dead = rows.filter((r) => r.failureClass !== null);
          if (dead.length > 0 && c.lifecycleEvents)
            await outboxEmit(
              client,
              rt.partition,
              rt.epoch,
              dead.map((r) =>
                jobEventRow(this.d.codec, {
                  jobId: r.jobId,
                  tenantId: r.tenantId,
                  type: 'DEAD_LETTERED',
                  version: r.version,
                  attempt: r.attempt,
                  detail: `${r.failureClass}: ${DEAD_BY_REAPER[r.failureClass!]}`,
                  callerId: null,
                }),
              ),
            );
          return rows;
        });
        let viaGone = 0;
        const timedOut = reaped.filter((r) => r.via === 'timeout').length;
        if (timedOut > 0) {
          this.d.metrics.executionTimeoutsReaped.inc(timedOut);
          this.d.log.warn(
            { partition: rt.partition, jobs: timedOut },
            'took back running jobs past their execution timeout (their handlers ignored the abort): attempts TIMED_OUT',
          );
        }
        for (const r of reaped) {
          this.d.metrics.leaseReaped.inc({ to: r.state });
          if (r.failureClass) {
            this.d.metrics.dlqIngress.inc({ queue: r.queue, class: r.failureClass });
            this.d.log.warn(
              { jobId: r.jobId, queue: r.queue, attempt: r.attempt, failureClass: r.failureClass },
              DEAD_BY_REAPER[r.failureClass],
            );
          }
          if (r.via === 'worker_gone') viaGone++;
          if (r.state === 'SCHEDULED')
            rt.place(r.jobId, r.dueAtMs, this.fireTags.tag(r.tenantId, r.priority));
        }
        if (viaGone > 0) {
          this.d.metrics.workerGoneReaped.inc(viaGone);
          this.d.log.info(
            { partition: rt.partition, jobs: viaGone, workers: gone },
            'took back running jobs of gone worker processes without waiting for their leases',
          );
        }
        // A look cut short by its limit goes on at the next pass. One that was not is complete:
        // a row it skipped (SKIP LOCKED) or a job the gone process started after it (it was
        // frozen, not dead) waits for its own lease, as before liveness.
        if (gone.length > 0 && viaGone < c.claimBatchSize)
          this.goneWorkers.sweptAll(rt.partition, rt.epoch, gone);
        total += reaped.length;
      } catch (err) {
        this.owner.handleLoopError(rt, err, 'lease_reap');
      }
    }
    if (total > 0) this.firing.arm(true);
    return total;
  }

  /** Moves every owned partition's horizon to now + horizonMs. */
  async extendHorizonOnce(): Promise<void> {
    const until = Date.now() + this.d.config.horizonMs;
    await Promise.all(
      this.owner
        .all()
        .map((rt) =>
          rt
            .serial(() => this.owner.loadUntil(rt, until))
            .catch((err: unknown) => this.owner.handleLoopError(rt, err, 'horizon')),
        ),
    );
    this.firing.arm(true);
  }

  /** Schedule sweep: generates due occurrences the wheel did not (and releases buffered ones). */
  async generateOnce(): Promise<void> {
    for (const rt of this.owner.all()) {
      // Held: a pause or delete of a schedule may still be on its way from the command topic.
      if (rt.closed || rt.held) continue;
      try {
        this.applyGeneration(rt, await this.generator.runOnce(rt, null));
      } catch (err) {
        this.owner.handleLoopError(rt, err, 'schedule_generate');
      }
    }
    this.firing.arm();
  }

  private applyGeneration(rt: PartitionRuntime, fx: GenerationEffects): void {
    for (const j of fx.jobs) {
      if (j.dueMs < 0) rt.forget(j.jobId);
      else if (j.dueMs < rt.loadedUntilMs)
        rt.place(
          j.jobId,
          j.dueMs,
          j.tenantId === undefined ? undefined : this.fireTags.tag(j.tenantId, j.priority ?? 0),
        );
    }
    for (const s of fx.schedules) {
      if (s.nextFireAtMs !== null && s.nextFireAtMs < rt.loadedUntilMs)
        rt.place(scheduleEntryId(s.scheduleId), s.nextFireAtMs, FireTags.FIRST);
      else rt.forget(scheduleEntryId(s.scheduleId));
    }
  }

  /** The outbox slot's lag and activity, for alerts that do not go silent when the relay stops. */
  async checkSlotOnce(): Promise<void> {
    const slot = await outboxSlotState(this.d.pool, this.d.config.outboxSlot);
    this.d.metrics.slotActive.set(slot?.active ? 1 : 0);
    this.d.metrics.slotLagBytes.set(slot?.lagBytes ?? 0);
  }

  /** Retention: old outbox rows, command ids and finished jobs (see retentionSweep). */
  async pruneOnce(): Promise<void> {
    await retentionSweep({ ...this.d, stopping: () => this.stopping });
  }

  /**
   * Runs `step` every `ms`, never two at once. A tick that comes while a step runs is skipped, or
   * with `runMissed` run as soon as that step ends (the catch-up: a pass that used its whole
   * period draining a backlog is followed at once by the next, not a period later).
   */
  private every(ms: number, step: () => Promise<unknown>, runMissed = false): void {
    let running = false;
    let missed = false;
    const run = (): void => {
      running = true;
      step()
        .catch((err: unknown) => this.d.log.error({ err }, 'loop failed'))
        .finally(() => {
          running = false;
          if (missed && !this.stopping) {
            missed = false;
            run();
          }
        });
    };
    const t = setInterval(() => {
      if (this.stopping) return;
      if (running) missed = runMissed;
      else run();
    }, ms);
    t.unref();
    this.loops.push(t);
  }
}
