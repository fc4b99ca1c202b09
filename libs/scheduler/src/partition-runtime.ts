import type { DueIndex } from './due-index.js';
import { DEFAULT_FIRE_WEIGHTS, FairReady } from './fair-ready.js';

/**
 * What this process holds for one owned partition of the command topic: its fencing epoch, the
 * due-time index of its SCHEDULED jobs due before `loadedUntilMs`, and a serial lane so command
 * apply and horizon extension never interleave (the horizon query then always sees committed
 * creates, and an apply never races a load).
 */
export class PartitionRuntime {
  /** Set when a write was refused by the fence or the partition was revoked: stop all work. */
  closed = false;
  /**
   * Revoked, and still firing from its wheel until the new owner's epoch bump fences it or this
   * time passes (ms; 0: not revoked). The fence makes that safe; it spares the jobs due during a
   * handoff the wait for the new owner's setup.
   */
  lingerUntilMs = 0;
  loadedUntilMs = 0;
  /**
   * Firing from a window read before this owner's epoch bump, until the same window is read again
   * after it: the entries the old owner fired in between are still here, and the misses of their
   * claims count as `handoff`, not `gone` (see `PartitionOwnership`).
   */
  settling = false;
  /** When this process took the partition under `epoch` (ms). */
  ownedSinceMs = Date.now();
  /**
   * The last command-topic offset this owner must have applied before it fires anything of the
   * partition: the end offset at assignment, less one (-1: nothing to wait for). Until
   * `appliedOffset` reaches it the partition is `held`: a cancel or reschedule already on Kafka
   * when this owner took over is applied before the job it names can fire (see
   * `PartitionOwnership`). Lowered to -1 when the hold's bound passes.
   */
  catchUpTo = -1;
  /** Whether a takeover hold is waiting for this owner's first end-offset read. */
  catchUpUnknown = false;
  /** When the current takeover hold began (ms; 0: none under way). */
  holdStartedMs = 0;
  /** Commands between the applied offset and the end at the hold's start (-1: not known). */
  holdBacklog = 0;

  /** Firing is held until the commands already on Kafka at takeover are applied. */
  get held(): boolean {
    return this.catchUpUnknown || this.catchUpTo > this.appliedOffset;
  }

  /** Held as this partition's owner: neither let go of nor revoked (lingering). */
  get owning(): boolean {
    return !this.closed && this.lingerUntilMs === 0;
  }
  /** Entries taken out of `index` as due and not claimed yet, served fairly (see FairReady). */
  readonly ready: FairReady;
  private lane: Promise<unknown> = Promise.resolve();

  constructor(
    readonly partition: number,
    readonly epoch: number,
    public appliedOffset: number,
    readonly index: DueIndex,
    fireWeights: readonly [number, number, number] = DEFAULT_FIRE_WEIGHTS,
  ) {
    this.ready = new FairReady(fireWeights);
  }

  /**
   * Puts a job (or schedule) entry at `dueMs`, wherever it was: an entry waiting in the ready set
   * leaves it (keeping its tag when none is given), so a rescheduled job is not offered to a claim
   * at its old time.
   */
  place(jobId: string, dueMs: number, tag?: number): void {
    const was = this.ready.discard(jobId);
    this.index.upsert(jobId, dueMs, tag ?? was?.tag);
  }

  /**
   * Drops a job's entry from the index and the ready set (cancelled, finished, claimed elsewhere):
   * both, as an entry put back into the index by a failed round can have a twin waiting there.
   */
  forget(jobId: string): void {
    this.index.remove(jobId);
    this.ready.discard(jobId);
  }

  /** The earliest due time this partition holds, in its index or ready to claim (Infinity: none). */
  nextDueMs(): number {
    return this.ready.size > 0
      ? Math.min(this.ready.oldestDueMs(), this.index.nextDueMs())
      : this.index.nextDueMs();
  }

  /** Runs `work` after every earlier lane task of this partition has finished. */
  serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.lane.then(work, work);
    this.lane = next.catch(() => undefined);
    return next;
  }
}
