import type { GoneWorker } from '@sched/store';

/**
 * Which gone worker processes the reaper still has to look for in which partition. A gone process
 * (see `workersGone`: it stopped beating, or a new one took over its id) is looked for once per
 * partition and owner epoch: after it stopped, nothing new gets its id as lease owner, so a look
 * that took back fewer jobs than its limit found them all. A process that comes back and goes
 * again (a new `aliveUntilMs`) or a new take-over (a new incarnation) is a new case, looked for
 * again. Pure bookkeeping, no I/O.
 */
export class GoneWorkers {
  /** Case key → the `partition:epoch` pairs looked through. */
  private readonly swept = new Map<string, Set<string>>();
  private gone: GoneWorker[] = [];

  /** The latest list from the database; forgets cases no longer in it. */
  update(gone: readonly GoneWorker[]): void {
    this.gone = [...gone];
    const keys = new Set(gone.map(caseKey));
    for (const k of this.swept.keys()) if (!keys.has(k)) this.swept.delete(k);
  }

  get count(): number {
    return this.gone.length;
  }

  /** Worker ids still to look for in `partition` under `epoch`. */
  toSweep(partition: number, epoch: number): string[] {
    const at = `${partition}:${epoch}`;
    const ids = new Set<string>();
    for (const g of this.gone) if (!this.swept.get(caseKey(g))?.has(at)) ids.add(g.workerId);
    return [...ids];
  }

  /** The look for `workerIds` in `partition` under `epoch` is complete (it was not cut by its limit). */
  sweptAll(partition: number, epoch: number, workerIds: readonly string[]): void {
    const at = `${partition}:${epoch}`;
    const ids = new Set(workerIds);
    for (const g of this.gone) {
      if (!ids.has(g.workerId)) continue;
      const k = caseKey(g);
      let parts = this.swept.get(k);
      if (parts === undefined) this.swept.set(k, (parts = new Set()));
      parts.add(at);
    }
  }
}

function caseKey(g: GoneWorker): string {
  return `${g.workerId}\u0000${g.incarnation}\u0000${g.dead ? g.aliveUntilMs : 'replaced'}`;
}
