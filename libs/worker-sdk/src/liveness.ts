import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { workerBeat, workerGone } from '@sched/store';

export interface LivenessDeps {
  pool: pg.Pool;
  log: Logger;
  workerId: string;
  /** Alive for this long after each beat (database clock); 0: no liveness row. */
  ttlMs: number;
  everyMs: number;
}

/**
 * This process's liveness row (migration 013): beaten every `everyMs` for `ttlMs`, so that when
 * the process dies the reaper takes its running jobs back within about `ttlMs` rather than
 * waiting for each job's lease. One write per process per beat, whatever it runs. The first beat
 * (at start, before any job) also takes the worker id over from a previous process under it,
 * whose running jobs are then orphaned and taken back. A failed beat is logged and the next one
 * tries again: the jobs' own leases still hold them.
 */
export class WorkerLiveness {
  /** This process among all that ever ran under the worker id. */
  readonly incarnation = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private failing = false;

  constructor(private readonly d: LivenessDeps) {}

  get enabled(): boolean {
    return this.d.ttlMs > 0;
  }

  /** The first beat, then one every `everyMs`. Throws if the first fails (the table is missing, say). */
  async start(): Promise<void> {
    if (!this.enabled) return;
    const first = await workerBeat(this.d.pool, this.d.workerId, this.incarnation, this.d.ttlMs).catch(
      (err: unknown) => {
        if ((err as { code?: string }).code !== '42P01') throw err;
        throw Object.assign(
          new Error(
            'worker liveness needs the worker_liveness table (store migration 013): migrate the schema first (a scheduler does at start), or set livenessTtlMs to 0 (SCHED_WORKER_LIVENESS_TTL_MS=0)',
          ),
          { code: 'SCHED_E_SCHEMA_BEHIND', cause: err },
        );
      },
    );
    if (first.replaced)
      this.d.log.warn(
        { workerId: this.d.workerId, previous: first.replaced },
        'took the worker id over from a previous process: the jobs it had running are taken back now',
      );
    this.timer = setInterval(() => this.beatInTurn(), this.d.everyMs);
    this.timer.unref();
  }

  /** Stops beating and says this process is gone (its jobs have ended: the caller waited for them). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.inFlight;
    if (!this.enabled) return;
    await workerGone(this.d.pool, this.d.workerId, this.incarnation).catch((err: unknown) =>
      this.d.log.warn({ err }, 'could not mark this worker gone; its row lapses by itself'),
    );
  }

  private beatInTurn(): void {
    if (this.inFlight) return; // one beat at a time: a slow database skips a turn, not piles up
    this.inFlight = this.beat().finally(() => (this.inFlight = null));
  }

  private async beat(): Promise<void> {
    try {
      const b = await workerBeat(this.d.pool, this.d.workerId, this.incarnation, this.d.ttlMs);
      if (b.replaced)
        // Another process beat under this id since our last beat: a second live process configured
        // with the same SCHED_WORKER_ID, or this one was frozen and the id restarted elsewhere.
        this.d.log.error(
          { code: 'SCHED_E_WORKER_ID_SHARED', workerId: this.d.workerId, other: b.replaced },
          "another process beats under this worker id: each takes the other's running jobs back; give every process its own SCHED_WORKER_ID",
        );
      if (this.failing) this.d.log.info('liveness beats again');
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        this.d.log.warn({ err }, 'liveness beat failed; running jobs are still held by their leases');
      this.failing = true;
    }
  }
}
