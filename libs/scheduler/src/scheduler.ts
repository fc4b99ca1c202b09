import type pg from 'pg';
import type { Logger } from '@sched/logging';
import {
  negotiatedSessionTimeout,
  type GroupConsumer,
  type KafkaPort,
  type MessageProducer,
} from '@sched/kafka';
import {
  FencedError,
  jobLoadWindow,
  leaseReap,
  homeRegion,
  inTransaction,
  NotHomeRegionError,
  partitionClaim,
  scheduleLoadWindow,
} from '@sched/store';
import { Claimer } from './claimer.js';
import { FiringDriver } from './firing-driver.js';
import { DispatchObserver } from './dispatch-observer.js';
import { CommandApplier } from './command-applier.js';
import type { SchedulerCodec } from './commands.js';
import type { KnownNames } from './command-validation.js';
import type { SchedulerConfig } from './config.js';
import type { DueIndex } from './due-index.js';
import { PartitionRuntime } from './partition-runtime.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';
import { ScheduleGenerator, scheduleEntryId, type GenerationEffects } from './schedule-generator.js';
import { FireTags } from './fair-ready.js';
import { Reconciler } from './reconciler.js';
import { retentionSweep } from './retention-sweep.js';

/** How often a running scheduler reads the home region (`checkHomeRegionOnce`). */
const HOME_REGION_CHECK_MS = 2_000;
/** On a new assignment, the window loaded before firing starts; the rest of the horizon follows. */
const FIRST_WINDOW_MS = 30_000;

export interface SchedulerDeps {
  config: SchedulerConfig;
  pool: pg.Pool;
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
  private readonly runtimes = new Map<number, PartitionRuntime>();
  private consumer: GroupConsumer | null = null;
  private producer: MessageProducer | null = null;
  private applier: CommandApplier | null = null;
  private readonly claimer: Claimer;
  private readonly generator: ScheduleGenerator;
  private readonly reconciler: Reconciler;
  /** Assignments being set up (claims and first wheel loads under way): catch-up waits for them. */
  private assigning = 0;
  private readonly firing: FiringDriver;
  /** One numbering of tenants for every owned partition's index. */
  private readonly fireTags = new FireTags();
  private readonly loops: NodeJS.Timeout[] = [];
  private stopping = false;
  /** How long a revoked partition keeps firing at most (see `onRevoked`). */
  private lingerMs = 0;
  private observer: DispatchObserver | null = null;
  private onDemoted: ((err: NotHomeRegionError) => void) | undefined;
  /**
   * Resolves when a partition claim was refused because another region is home now
   * (`sched region promote`): every partition has been let go of; the caller stops this scheduler
   * and stands by until its region is home again.
   */
  readonly demoted = new Promise<NotHomeRegionError>((resolve) => (this.onDemoted = resolve));

  constructor(private readonly d: SchedulerDeps) {
    this.claimer = new Claimer(d.pool, d.codec, d.metrics, d.config.dispatchLeaseMs);
    this.generator = new ScheduleGenerator(d.pool, d.metrics, d.log, {
      misfireThresholdMs: d.config.misfireThresholdMs,
      maxPerPass: 1_000,
      batch: 100,
      crashAfterGenerate: d.config.testCrashAfterGenerate,
    });
    this.reconciler = new Reconciler({
      pool: d.pool,
      config: d.config,
      metrics: d.metrics,
      log: d.log,
      claimer: this.claimer,
      fireTags: this.fireTags,
      runtimes: () => [...this.runtimes.values()],
      runtime: (p) => this.runtimes.get(p),
      release: (rt) => this.release(rt.partition, 'fenced', rt),
      assigning: () => this.assigning > 0,
      stopping: () => this.stopping,
    });
    d.metrics.setWheelSizeSource(() =>
      [...this.runtimes.values()]
        .filter((r) => !r.closed)
        .map((r) => [r.partition, r.index.size + r.ready.size] as const),
    );
    this.firing = new FiringDriver({
      config: d.config,
      claimer: this.claimer,
      generator: this.generator,
      metrics: d.metrics,
      log: d.log,
      runtimes: () => [...this.runtimes.values()],
      release: (rt, why) => this.release(rt.partition, why, rt),
      applyGeneration: (rt, fx) => this.applyGeneration(rt, fx),
    });
  }

  async start(): Promise<void> {
    const c = this.d.config;
    this.producer = await this.d.kafka.producer({ idempotent: true });
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
      onDispatched: (jobs, partition) => this.claimer.observe(jobs, 'create', partition),
      fireTags: this.fireTags,
    });
    const sessionMs = await negotiatedSessionTimeout(
      this.d.kafka,
      c.sessionTimeoutMs,
      'SCHED_SESSION_TIMEOUT_MS',
      this.d.log,
    );
    // Long enough for the new owner to join and claim; a partition nobody claims stops after it.
    this.lingerMs = Math.min(sessionMs, 10_000);
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
        onAssigned: (_topic, partitions) => this.onAssigned(partitions),
        onRevoked: (_topic, partitions) => this.onRevoked(partitions),
        // A partition given up on a fence is not claimed at the next rebalance, and set up again
        // (fresh epoch, wheel reloaded) if the group gives it back.
        holds: (_topic, partition) => {
          const rt = this.runtimes.get(partition);
          return rt !== undefined && rt.lingerUntilMs === 0;
        },
        onBatch: async (batch) => {
          const rt = this.runtimes.get(batch.partition);
          if (!rt || rt.closed)
            throw new Error(`partition ${batch.partition} is not owned here; batch will be refetched`);
          await rt
            .serial(() => this.applier!.applyBatch(rt, batch.messages))
            .catch((err: unknown) => this.onFenced(rt, err));
          this.firing.arm();
        },
      },
    );
    const consumer = this.consumer;
    this.d.metrics.consumerRestarts.setSource(() => consumer.restarts());
    await this.consumer.start();
    this.every(c.reconcileEveryMs, () => this.reconcileOnce(), true);
    this.every(c.reapEveryMs, () => this.reapOnce());
    this.every(c.horizonExtendEveryMs, () => this.extendHorizonOnce());
    this.every(c.pruneEveryMs, () => this.pruneOnce());
    this.every(c.generateEveryMs, () => this.generateOnce());
    this.every(HOME_REGION_CHECK_MS, () => this.checkHomeRegionOnce());
    if (c.observeDispatch) {
      this.observer = new DispatchObserver(
        this.d.kafka,
        this.d.pool,
        (v) => this.d.codec.dispatchClaimedAt(v),
        this.d.metrics,
        this.d.log,
        `${c.groupId}.observer.${c.ownerId}`,
      );
      await this.observer
        .start()
        .catch((err: unknown) => this.d.log.warn({ err }, 'dispatch observer not started'));
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.loops) clearInterval(t);
    this.firing.stop();
    await this.observer?.stop();
    await this.consumer?.stop();
    await this.producer?.disconnect();
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
    for (const p of [...this.runtimes.keys()]) this.release(p, 'not home region');
    this.onDemoted(err);
    this.onDemoted = undefined;
  }

  /** Owned partitions and their epochs (tests, admin). */
  ownership(): { partition: number; epoch: number; wheelSize: number }[] {
    return [...this.runtimes.values()]
      .filter((r) => !r.closed && r.lingerUntilMs === 0)
      .map((r) => ({ partition: r.partition, epoch: r.epoch, wheelSize: r.index.size + r.ready.size }));
  }

  // --- ownership -------------------------------------------------------------------------

  private async onAssigned(partitions: number[]): Promise<void> {
    this.d.metrics.rebalances.inc();
    this.assigning++;
    try {
      await this.setUpAssigned(partitions);
    } finally {
      this.assigning--;
    }
    this.d.metrics.partitionsOwned.set(this.ownership().length);
    this.firing.arm(true);
  }

  /** Claims each assigned partition (epoch bump) and loads its wheel's first window. */
  private async setUpAssigned(partitions: number[]): Promise<void> {
    // Every partition's setup runs to its end before this returns; one that failed is not held
    // (no runtime) and the consumer assigns it again later (`holds`).
    const results = await Promise.allSettled(
      partitions.map(async (p) => {
        const had = this.runtimes.get(p);
        if (had && had.lingerUntilMs > 0) {
          // Given back while it lingered: kept if nobody took it meanwhile (its epoch is current).
          if (await this.epochStillCurrent(had)) {
            had.lingerUntilMs = 0;
            return;
          }
          this.release(p, 'fenced', had);
        } else if (had) return; // held already: never two runtimes for one partition
        const own = await partitionClaim(
          this.d.pool,
          p,
          this.d.config.ownerId,
          this.d.config.region || undefined,
        );
        const rt = new PartitionRuntime(
          p,
          own.epoch,
          own.appliedOffset,
          this.d.newIndex(),
          this.d.config.firePriorityWeights,
        );
        this.runtimes.set(p, rt);
        this.d.metrics.partitionEpoch.set({ partition: String(p) }, own.epoch);
        this.d.metrics.partitionOwnedSince.set({ partition: String(p) }, Date.now() / 1000);
        // The next FIRST_WINDOW_MS first, so firing starts as soon as they are in; the rest of the
        // horizon follows in the background (through the serial lane: applies never interleave).
        const first = Math.min(FIRST_WINDOW_MS, this.d.config.horizonMs);
        try {
          await rt.serial(() => this.loadUntil(rt, Date.now() + first));
        } catch (err) {
          this.release(p, 'setup failed', rt); // not held: the consumer assigns it again later
          throw err;
        }
        this.d.log.info({ partition: p, epoch: own.epoch, wheel: rt.index.size }, 'partition owned');
        void rt
          .serial(() => this.loadUntil(rt, Date.now() + this.d.config.horizonMs))
          .then(() => this.firing.arm(true))
          .catch((err: unknown) => this.handleLoopError(rt, err, 'horizon'));
      }),
    );
    const refused = results.find((r) => r.status === 'rejected' && r.reason instanceof NotHomeRegionError);
    if (refused) return this.demote((refused as PromiseRejectedResult).reason as NotHomeRegionError);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * A revoked partition keeps firing from its wheel until its new owner's epoch bump fences it
   * (its next write is refused and it is released) or `lingerMs` passes, and no longer counts as
   * owned. No new command comes for it; a batch fetched before the revoke may still be applied,
   * fenced like any write (the new owner skips what was applied by the offset recorded with it).
   * While stopping, it is released at once.
   */
  private async onRevoked(partitions: number[]): Promise<void> {
    this.d.metrics.rebalances.inc();
    const lingerMs = this.stopping ? 0 : this.lingerMs;
    for (const p of partitions) {
      const rt = this.runtimes.get(p);
      if (!rt || rt.closed || lingerMs === 0) {
        this.release(p, 'revoked');
        continue;
      }
      rt.lingerUntilMs = Date.now() + lingerMs;
      setTimeout(() => {
        // The latest revoke's timer ends it (an earlier one, of a linger since ended, does not).
        if (rt.lingerUntilMs > 0 && rt.lingerUntilMs <= Date.now()) this.release(p, 'revoked', rt);
      }, lingerMs).unref();
    }
    this.d.metrics.partitionsOwned.set(this.ownership().length);
  }

  /** Whether a runtime's epoch is still the partition's (nobody claimed it since). */
  private async epochStillCurrent(rt: PartitionRuntime): Promise<boolean> {
    const { rows } = await this.d.pool.query<{ epoch: string }>(
      'SELECT epoch FROM partition_owner WHERE partition = $1',
      [rt.partition],
    );
    return rows.length === 1 && Number(rows[0]!.epoch) === rt.epoch && !rt.closed;
  }

  /** Lets a partition go; with `only`, only if that runtime is still the partition's (not a newer one). */
  private release(partition: number, why: string, only?: PartitionRuntime): void {
    const rt = this.runtimes.get(partition);
    if (!rt || (only && rt !== only)) return;
    rt.closed = true;
    this.runtimes.delete(partition);
    this.d.metrics.partitionEpoch.remove({ partition: String(partition) });
    this.d.metrics.partitionOwnedSince.remove({ partition: String(partition) });
    this.d.metrics.overdue.remove({ partition: String(partition) });
    this.d.metrics.overdueOldestAge.remove({ partition: String(partition) });
    this.reconciler.forgetBacklogCounts();
    this.d.metrics.partitionsOwned.set(this.ownership().length);
    this.d.log.info({ partition, epoch: rt.epoch, why }, 'partition released');
  }

  private onFenced(rt: PartitionRuntime, err: unknown): never {
    if (err instanceof FencedError) {
      this.d.metrics.fencedWrites.inc({ statement: err.statement });
      this.release(rt.partition, 'fenced', rt);
    }
    throw err;
  }

  /** Loads SCHEDULED jobs due before `untilMs` that the index does not hold yet. */
  private async loadUntil(rt: PartitionRuntime, untilMs: number): Promise<void> {
    // First load: jobs overdue by more than the grace are left to the rate-limited catch-up drain
    // (reconcileOnce), so a backlog after an outage does not leave in one self-inflicted burst.
    const from = rt.loadedUntilMs === 0 ? Date.now() - this.d.config.reconcileGraceMs : rt.loadedUntilMs;
    for await (const page of jobLoadWindow(this.d.pool, rt.partition, from, untilMs)) {
      if (rt.closed) return;
      for (const e of page) rt.index.upsert(e.jobId, e.dueAtMs, this.fireTags.tag(e.tenantId, e.priority));
    }
    for (const sch of await scheduleLoadWindow(this.d.pool, rt.partition, untilMs)) {
      if (rt.closed) return;
      rt.index.upsert(scheduleEntryId(sch.scheduleId), sch.nextFireAtMs ?? Date.now(), FireTags.FIRST);
    }
    rt.loadedUntilMs = untilMs;
  }

  // --- maintenance loops (each also callable once) --------------------------------------------

  /** One reconcile round: catch-up drain and backlog gauges (see `Reconciler`). Returns how many it claimed. */
  reconcileOnce(): Promise<number> {
    return this.reconciler.once();
  }

  /** Returns expired leases to SCHEDULED (or DEAD), per owned partition. Returns how many. */
  async reapOnce(): Promise<number> {
    let total = 0;
    for (const rt of [...this.runtimes.values()]) {
      if (rt.closed) continue;
      try {
        const reaped = await inTransaction(this.d.pool, (client) =>
          leaseReap(
            client,
            rt.partition,
            rt.epoch,
            this.d.config.claimBatchSize,
            this.d.config.reapSkewMarginMs,
          ),
        );
        for (const r of reaped) {
          this.d.metrics.leaseReaped.inc({ to: r.state });
          if (r.state === 'SCHEDULED')
            rt.place(r.jobId, r.dueAtMs, this.fireTags.tag(r.tenantId, r.priority));
        }
        total += reaped.length;
      } catch (err) {
        this.handleLoopError(rt, err, 'lease_reap');
      }
    }
    if (total > 0) this.firing.arm(true);
    return total;
  }

  /** Moves every owned partition's horizon to now + horizonMs. */
  async extendHorizonOnce(): Promise<void> {
    const until = Date.now() + this.d.config.horizonMs;
    await Promise.all(
      [...this.runtimes.values()].map((rt) =>
        rt
          .serial(() => this.loadUntil(rt, until))
          .catch((err: unknown) => this.handleLoopError(rt, err, 'horizon')),
      ),
    );
    this.firing.arm(true);
  }

  /** Schedule sweep: generates due occurrences the wheel did not (and releases buffered ones). */
  async generateOnce(): Promise<void> {
    for (const rt of [...this.runtimes.values()]) {
      if (rt.closed) continue;
      try {
        this.applyGeneration(rt, await this.generator.runOnce(rt, null));
      } catch (err) {
        this.handleLoopError(rt, err, 'schedule_generate');
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

  /** Retention: old outbox rows, command ids and finished jobs (see retentionSweep). */
  async pruneOnce(): Promise<void> {
    await retentionSweep({ ...this.d, stopping: () => this.stopping });
  }

  private handleLoopError(rt: PartitionRuntime, err: unknown, loop: string): void {
    if (err instanceof FencedError) {
      this.d.metrics.fencedWrites.inc({ statement: err.statement });
      this.release(rt.partition, 'fenced', rt);
    } else this.d.log.error({ err, partition: rt.partition, loop }, 'maintenance step failed');
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
