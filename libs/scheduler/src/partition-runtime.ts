import type { DueIndex } from './due-index.js';

/**
 * What this process holds for one owned partition of the command topic: its fencing epoch, the
 * due-time index of its SCHEDULED jobs due before `loadedUntilMs`, and a serial lane so command
 * apply and horizon extension never interleave (the horizon query then always sees committed
 * creates, and an apply never races a load).
 */
export class PartitionRuntime {
  /** Set when a write was refused by the fence or the partition was revoked: stop all work. */
  closed = false;
  loadedUntilMs = 0;
  private lane: Promise<unknown> = Promise.resolve();

  constructor(
    readonly partition: number,
    readonly epoch: number,
    public appliedOffset: number,
    readonly index: DueIndex,
  ) {}

  /** Runs `work` after every earlier lane task of this partition has finished. */
  serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.lane.then(work, work);
    this.lane = next.catch(() => undefined);
    return next;
  }
}
