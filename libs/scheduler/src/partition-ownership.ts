import type pg from 'pg';
import type { Logger } from '@sched/logging';
import {
  FencedError,
  jobLoadWindow,
  NotHomeRegionError,
  partitionClaim,
  scheduleLoadWindow,
  type PartitionOwnership as ClaimedOwnership,
} from '@sched/store';
import type { SchedulerConfig } from './config.js';
import type { DueIndex } from './due-index.js';
import { FireTags } from './fair-ready.js';
import { PartitionRuntime } from './partition-runtime.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';
import { scheduleEntryId } from './schedule-generator.js';

/** On a new assignment, the window loaded before firing starts; the rest of the horizon follows. */
export const FIRST_WINDOW_MS = 30_000;

/** One row of the index window: a job or schedule entry as the store returns it. */
export interface WindowEntry {
  id: string;
  dueMs: number;
  tag: number;
}

export interface OwnershipDeps {
  config: Pick<
    SchedulerConfig,
    'ownerId' | 'region' | 'horizonMs' | 'reconcileGraceMs' | 'firePriorityWeights' | 'takeoverMaxHoldMs'
  >;
  pool: pg.Pool;
  metrics: SchedulerMetrics;
  log: Logger;
  newIndex: () => DueIndex;
  fireTags: FireTags;
  /** Wakes the firing driver (`force`: recompute its sleep even if one is armed). */
  arm(force: boolean): void;
  /** A claim was refused because another region is home: the scheduler lets everything go. */
  demote(err: NotHomeRegionError): void;
  /** Called after a partition is let go of (cached per-partition figures are stale). */
  released(): void;
  stopping(): boolean;
  /** The store calls; tests replace them to check the order of a setup. */
  claim?: (partition: number) => Promise<ClaimedOwnership>;
  loadWindow?: (partition: number, fromMs: number, untilMs: number) => AsyncIterable<WindowEntry[]>;
  currentEpoch?: (partition: number) => Promise<number | undefined>;
  /**
   * The command topic's end offset of each partition now (see `KafkaAdminPort.endOffsets`): what a
   * new owner applies before it fires (the takeover hold).
   */
  endOffsets(): Promise<Map<number, number>>;
}

/**
 * The partitions this scheduler process owns: one `PartitionRuntime` per partition the command
 * topic's group assigned to it, each under its own fencing epoch.
 *
 * Setting a partition up reads its first window of due jobs into a fresh index **before** the
 * epoch bump, while the old owner (lingering, see `onRevoked`) still fires from its own wheel; the
 * bump then fences the old owner and this one fires at once, so the jobs due during a handoff wait
 * for one claim statement, not for a wheel load. The same window is read again after the bump for
 * what changed in between (a command batch the old owner applied, a lease it reaped, a job or
 * schedule it moved): new entries are added and moved ones put at their new time, and an entry of
 * the first read that the second no longer has (the old owner fired it, or it was cancelled or
 * moved out of the window) is dropped unless this owner moved it since (`dropStale`). An entry that
 * both reads return at the same time but that is in neither the index nor the ready set is being
 * claimed by a firing round of this owner (started at the bump, not committed when the second read
 * looked) and is not added again. The rounds before the second read is done still ask for what
 * the old owner fired between the first read and the bump (it fires until fenced); their misses
 * count as `handoff` (`settling`), so that `gone` keeps meaning an index that disagrees with the
 * database. No miss is ever a second dispatch: the claim checks state, due time and epoch in the
 * database.
 *
 * **Commands before firing (the takeover hold).** Whatever the window holds, a new owner fires
 * nothing of the partition (no wheel round, no catch-up, no schedule occurrence, no dispatch by a
 * create) until it has applied every command that was on the command topic when it took the
 * partition: it reads the partition's end offset at assignment and holds until its applied offset
 * reaches it, as a Kafka Streams task restores its state before it processes. A cancel or a
 * reschedule acknowledged by Kafka before then is in Postgres before the job could fire, however
 * long the partition had no live owner. The hold lasts the backlog's apply time (a handoff from a
 * live owner has little or none); it is reported per takeover (`sched_takeover_hold_seconds`, a
 * log line) and bounded by `takeoverMaxHoldMs`: past it the partition fires with the rest of its
 * backlog unapplied (a warning and `sched_takeover_hold_limit_total` say so), so a partition whose
 * commands cannot be applied does not stop firing for good. An end offset that cannot be read is
 * taken from the first fetched batch's high watermark instead.
 */
export class PartitionOwnership {
  private readonly runtimes = new Map<number, PartitionRuntime>();
  /** Assignments being set up (claims and first wheel loads under way): catch-up waits for them. */
  private assigning = 0;
  /** How long a revoked partition keeps firing at most (see `onRevoked`); set once the session is known. */
  lingerMs = 0;

  constructor(private readonly d: OwnershipDeps) {}

  /** Every runtime held, lingering ones included. */
  all(): PartitionRuntime[] {
    return [...this.runtimes.values()];
  }

  get(partition: number): PartitionRuntime | undefined {
    return this.runtimes.get(partition);
  }

  isAssigning(): boolean {
    return this.assigning > 0;
  }

  /** Whether this process holds the partition as its owner (not lingering after a revoke). */
  holds(partition: number): boolean {
    const rt = this.runtimes.get(partition);
    return rt?.owning === true;
  }

  /** Owned partitions and their epochs (tests, admin). */
  owned(): { partition: number; epoch: number; wheelSize: number }[] {
    return this.all()
      .filter((r) => r.owning)
      .map((r) => ({ partition: r.partition, epoch: r.epoch, wheelSize: r.index.size + r.ready.size }));
  }

  async onAssigned(partitions: number[]): Promise<void> {
    this.d.metrics.rebalances.inc();
    this.assigning++;
    try {
      // Read once for the whole assignment, beside the first window reads; a setup awaits it after
      // its claim. A failure is each setup's to handle (it falls back to the first batch).
      const ends = this.d.endOffsets();
      ends.catch(() => undefined);
      await this.setUpAssigned(partitions, ends);
    } finally {
      this.assigning--;
    }
    this.d.metrics.partitionsOwned.set(this.owned().length);
    this.d.arm(true);
  }

  /** Sets each assigned partition up (see the class doc); every setup runs to its end first. */
  private async setUpAssigned(partitions: number[], ends: Promise<Map<number, number>>): Promise<void> {
    // One that failed is not held (no runtime) and the consumer assigns it again later (`holds`).
    const results = await Promise.allSettled(partitions.map((p) => this.setUp(p, ends)));
    const refused = results.find((r) => r.status === 'rejected' && r.reason instanceof NotHomeRegionError);
    if (refused) return this.d.demote((refused as PromiseRejectedResult).reason as NotHomeRegionError);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async setUp(p: number, ends: Promise<Map<number, number>>): Promise<void> {
    const had = this.runtimes.get(p);
    if (had && had.lingerUntilMs > 0) {
      // Given back while it lingered: kept if nobody took it meanwhile (its epoch is current).
      if (await this.epochStillCurrent(had)) {
        had.lingerUntilMs = 0;
        this.setOwnerGauges(had);
        // Commands produced while it was revoked were fetched by nobody: applied before it fires on.
        await this.holdForBacklog(had, ends);
        return;
      }
      this.release(p, 'fenced', had);
    } else if (had) return; // held already: never two runtimes for one partition
    // The first window, read before the bump (the old owner keeps firing meanwhile).
    const fromMs = Date.now() - this.d.config.reconcileGraceMs;
    const untilMs = Date.now() + Math.min(FIRST_WINDOW_MS, this.d.config.horizonMs);
    const index = this.d.newIndex();
    const first = new Map<string, number>(); // id → due time, as the first read gave them
    for await (const page of this.loadWindow(p, fromMs, untilMs))
      for (const e of page) {
        index.upsert(e.id, e.dueMs, e.tag);
        first.set(e.id, e.dueMs);
      }
    const own = await (this.d.claim ?? this.claimInStore)(p);
    const rt = new PartitionRuntime(
      p,
      own.epoch,
      own.appliedOffset,
      index,
      this.d.config.firePriorityWeights,
    );
    rt.loadedUntilMs = untilMs;
    rt.catchUpUnknown = true; // held from the start: nothing fires before the end offset is known
    this.runtimes.set(p, rt);
    this.setOwnerGauges(rt);
    rt.settling = true; // until the second read: misses of what the old owner fired are `handoff`
    await this.holdForBacklog(rt, ends);
    this.d.arm(true); // fires from the window read before the bump, once the backlog is applied
    let stale = 0;
    try {
      // What changed between that read and the bump; through the serial lane, as every load.
      stale = await rt.serial(async () => {
        const seen = new Set<string>();
        for await (const page of this.loadWindow(p, fromMs, untilMs)) {
          if (rt.closed) return 0;
          for (const e of page) {
            seen.add(e.id);
            const ready = rt.ready.get(e.id);
            // Moved meanwhile (a reschedule, a retry): at its time now, wherever it waits. An
            // entry a firing round already took into the ready set stays there, not twinned.
            if (ready !== undefined) {
              if (ready.dueMs !== e.dueMs) rt.place(e.id, e.dueMs, e.tag);
            } else if (rt.index.has(e.id) || first.get(e.id) !== e.dueMs) {
              rt.index.upsert(e.id, e.dueMs, e.tag);
            }
            // Else it was read first at this time and is in neither: a firing round of this owner
            // took it and is claiming it (the read saw the row before that claim committed).
            // Added again, it would be claimed twice: the second a miss.
          }
        }
        return rt.closed ? 0 : dropStale(rt, first, seen);
      });
    } catch (err) {
      this.release(p, 'setup failed', rt); // not held: the consumer assigns it again later
      throw err;
    } finally {
      rt.settling = false;
    }
    this.d.log.info({ partition: p, epoch: own.epoch, wheel: rt.index.size, stale }, 'partition owned');
    // The rest of the horizon in the background (through the serial lane: applies never interleave).
    void rt
      .serial(() => this.loadUntil(rt, Date.now() + this.d.config.horizonMs))
      .then(() => this.d.arm(true))
      .catch((err: unknown) => this.handleLoopError(rt, err, 'horizon'));
  }

  /**
   * Starts a takeover hold: firing of `rt` waits until its applied offset reaches the partition's
   * end offset as `ends` gives it (or, when that read failed, as the first fetched batch says).
   * A takeover with nothing to apply is reported with a hold of 0.
   */
  private async holdForBacklog(rt: PartitionRuntime, ends: Promise<Map<number, number>>): Promise<void> {
    rt.catchUpUnknown = true;
    rt.holdStartedMs = Date.now();
    try {
      const end = (await ends).get(rt.partition);
      if (end === undefined) throw new Error(`no end offset for partition ${rt.partition}`);
      rt.catchUpTo = end - 1;
      rt.catchUpUnknown = false;
    } catch (err) {
      this.d.log.warn(
        { err, partition: rt.partition },
        'could not read the command partition end offset at takeover: holding firing until the first fetched batch says where the end is',
      );
    }
    rt.holdBacklog = rt.catchUpUnknown ? -1 : Math.max(0, rt.catchUpTo - rt.appliedOffset);
    if (!rt.held) return this.endHold(rt, 'nothing to apply');
    this.d.log.info(
      {
        partition: rt.partition,
        epoch: rt.epoch,
        appliedOffset: rt.appliedOffset,
        endOffset: rt.catchUpUnknown ? null : rt.catchUpTo + 1,
        backlog: rt.catchUpUnknown ? null : rt.holdBacklog,
      },
      'partition taken over: firing held until the commands already on Kafka are applied',
    );
    const limitMs = this.d.config.takeoverMaxHoldMs;
    if (limitMs > 0) {
      const started = rt.holdStartedMs;
      const t = setTimeout(() => {
        if (rt.closed || rt.holdStartedMs !== started || !rt.held) return;
        this.d.metrics.takeoverHoldLimit.inc();
        this.d.log.warn(
          {
            partition: rt.partition,
            epoch: rt.epoch,
            heldMs: Date.now() - started,
            appliedOffset: rt.appliedOffset,
            endOffset: rt.catchUpUnknown ? null : rt.catchUpTo + 1,
            limitMs,
          },
          'takeover hold limit (SCHED_TAKEOVER_MAX_HOLD_MS) reached: firing with commands still unapplied; a cancel or reschedule among them may lose to its job',
        );
        rt.catchUpTo = -1;
        rt.catchUpUnknown = false;
        this.endHold(rt, 'limit');
      }, limitMs);
      t.unref();
    }
  }

  /**
   * After each applied batch of a partition: ends its takeover hold once the applied offset has
   * reached the end offset read at takeover. `highWatermark` (the batch's fetch) sets that end
   * when it could not be read.
   */
  applied(rt: PartitionRuntime, highWatermark?: string): void {
    if (rt.holdStartedMs === 0) return;
    if (rt.catchUpUnknown && highWatermark !== undefined) {
      rt.catchUpTo = Number(highWatermark) - 1;
      rt.catchUpUnknown = false;
    }
    if (!rt.held) this.endHold(rt, 'caught up');
  }

  private endHold(rt: PartitionRuntime, why: 'nothing to apply' | 'caught up' | 'limit'): void {
    const heldMs = Date.now() - rt.holdStartedMs;
    rt.holdStartedMs = 0;
    this.d.metrics.takeoverHold.observe({ outcome: why === 'limit' ? 'limit' : 'caught_up' }, heldMs / 1000);
    if (why === 'nothing to apply') return; // the setup arms the driver itself
    this.d.log.info(
      { partition: rt.partition, epoch: rt.epoch, heldMs, backlog: rt.holdBacklog, why },
      'takeover hold ended: firing',
    );
    this.d.arm(true);
  }

  private readonly claimInStore = (p: number): Promise<ClaimedOwnership> =>
    partitionClaim(this.d.pool, p, this.d.config.ownerId, this.d.config.region || undefined);

  /**
   * A revoked partition keeps firing from its wheel until its new owner's epoch bump fences it
   * (its next write is refused and it is released) or `lingerMs` passes, and no longer counts as
   * owned. No new command comes for it; a batch fetched before the revoke may still be applied,
   * fenced like any write (the new owner skips what was applied by the offset recorded with it).
   * While stopping, it is released at once.
   */
  onRevoked(partitions: number[]): void {
    this.d.metrics.rebalances.inc();
    const lingerMs = this.d.stopping() ? 0 : this.lingerMs;
    for (const p of partitions) {
      const rt = this.runtimes.get(p);
      if (!rt || rt.closed || lingerMs === 0) {
        this.release(p, 'revoked');
        continue;
      }
      rt.lingerUntilMs = Date.now() + lingerMs;
      // Its new owner reports it from now on: a partition is in one process's gauges at a time.
      this.dropOwnerGauges(p);
      setTimeout(() => {
        // The latest revoke's timer ends it (an earlier one, of a linger since ended, does not).
        if (rt.lingerUntilMs > 0 && rt.lingerUntilMs <= Date.now()) this.release(p, 'revoked', rt);
      }, lingerMs).unref();
    }
    this.d.metrics.partitionsOwned.set(this.owned().length);
  }

  /** Whether a runtime's epoch is still the partition's (nobody claimed it since). */
  private async epochStillCurrent(rt: PartitionRuntime): Promise<boolean> {
    const epoch = await (this.d.currentEpoch ?? this.epochInStore)(rt.partition);
    return epoch === rt.epoch && !rt.closed;
  }

  private readonly epochInStore = async (p: number): Promise<number | undefined> => {
    const { rows } = await this.d.pool.query<{ epoch: string }>(
      'SELECT epoch FROM partition_owner WHERE partition = $1',
      [p],
    );
    return rows.length === 1 ? Number(rows[0]!.epoch) : undefined;
  };

  private setOwnerGauges(rt: PartitionRuntime): void {
    const label = { partition: String(rt.partition) };
    this.d.metrics.partitionEpoch.set(label, rt.epoch);
    this.d.metrics.partitionOwnedSince.set(label, rt.ownedSinceMs / 1000);
  }

  /** Removes a partition's per-owner gauges (epoch, tenure, overdue backlog). */
  private dropOwnerGauges(partition: number): void {
    const label = { partition: String(partition) };
    this.d.metrics.partitionEpoch.remove(label);
    this.d.metrics.partitionOwnedSince.remove(label);
    this.d.metrics.overdue.remove(label);
    this.d.metrics.overdueOldestAge.remove(label);
  }

  /** Lets a partition go; with `only`, only if that runtime is still the partition's (not a newer one). */
  release(partition: number, why: string, only?: PartitionRuntime): void {
    const rt = this.runtimes.get(partition);
    if (!rt || (only && rt !== only)) return;
    rt.closed = true;
    this.runtimes.delete(partition);
    this.dropOwnerGauges(partition);
    this.d.released();
    this.d.metrics.partitionsOwned.set(this.owned().length);
    this.d.log.info({ partition, epoch: rt.epoch, why }, 'partition released');
  }

  /** Lets every partition go (another region is home). */
  releaseAll(why: string): void {
    for (const p of [...this.runtimes.keys()]) this.release(p, why);
  }

  /** A write of this runtime failed: on a fence it is let go of; the error goes on either way. */
  onFenced(rt: PartitionRuntime, err: unknown): never {
    if (err instanceof FencedError) {
      this.d.metrics.fencedWrites.inc({ statement: err.statement });
      this.release(rt.partition, 'fenced', rt);
    }
    throw err;
  }

  /** A maintenance step of this runtime failed: let go of on a fence, logged otherwise. */
  handleLoopError(rt: PartitionRuntime, err: unknown, loop: string): void {
    if (err instanceof FencedError) {
      this.d.metrics.fencedWrites.inc({ statement: err.statement });
      this.release(rt.partition, 'fenced', rt);
    } else this.d.log.error({ err, partition: rt.partition, loop }, 'maintenance step failed');
  }

  /** Loads SCHEDULED jobs due before `untilMs` that the index does not hold yet. */
  async loadUntil(rt: PartitionRuntime, untilMs: number): Promise<void> {
    // First load: jobs overdue by more than the grace are left to the rate-limited catch-up drain
    // (the reconciler), so a backlog after an outage does not leave in one self-inflicted burst.
    const from = rt.loadedUntilMs === 0 ? Date.now() - this.d.config.reconcileGraceMs : rt.loadedUntilMs;
    for await (const page of this.loadWindow(rt.partition, from, untilMs)) {
      if (rt.closed) return;
      for (const e of page) rt.index.upsert(e.id, e.dueMs, e.tag);
    }
    rt.loadedUntilMs = untilMs;
  }

  /**
   * The SCHEDULED jobs due in [fromMs, untilMs), in pages (a horizon can hold millions), then the
   * schedules firing before untilMs.
   */
  private async *loadWindow(p: number, fromMs: number, untilMs: number): AsyncIterable<WindowEntry[]> {
    if (this.d.loadWindow) return yield* this.d.loadWindow(p, fromMs, untilMs);
    const tags = this.d.fireTags;
    for await (const page of jobLoadWindow(this.d.pool, p, fromMs, untilMs))
      yield page.map((e) => ({ id: e.jobId, dueMs: e.dueAtMs, tag: tags.tag(e.tenantId, e.priority) }));
    yield (await scheduleLoadWindow(this.d.pool, p, untilMs)).map((sch) => ({
      id: scheduleEntryId(sch.scheduleId),
      dueMs: sch.nextFireAtMs ?? Date.now(),
      tag: FireTags.FIRST,
    }));
  }
}

/**
 * After a new owner's second read of its first window: drops each entry of the first read that the
 * second did not return (`seen`), from the index or the ready set, where it still waits at the time
 * the first read gave it. One at another time was moved by this owner since (an apply through the
 * serial lane) and stays. Safe because the index is not the truth: a job dropped wrongly would
 * still be claimed by the reconciler. Returns how many were dropped.
 */
export function dropStale(
  rt: PartitionRuntime,
  first: ReadonlyMap<string, number>,
  seen: ReadonlySet<string>,
): number {
  let dropped = 0;
  for (const [id, dueMs] of first) {
    if (seen.has(id)) continue;
    if (rt.index.dueMsOf(id) === dueMs) {
      rt.index.remove(id);
      dropped++;
    } else if (rt.ready.get(id)?.dueMs === dueMs) {
      rt.ready.discard(id);
      dropped++;
    }
  }
  return dropped;
}
