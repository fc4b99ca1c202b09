import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { workerBeat, workerGone } from '@sched/store';

export interface LivenessDeps {
  /** Best a pool of its own (one connection), so that a beat never queues behind job statements. */
  pool: pg.Pool;
  log: Logger;
  workerId: string;
  /** Alive for this long after each beat (database clock); 0: no liveness row. */
  ttlMs: number;
  everyMs: number;
  /**
   * Called once when this process's liveness has lapsed by its own clock (no beat succeeded for
   * `ttlMs`, or another process holds the row): the reaper may be taking its running jobs back,
   * so they should stop. Called again only after a beat has succeeded in between.
   */
  onLapsed(): void;
}

/**
 * This process's liveness row (migration 013): beaten every `everyMs` for `ttlMs`, so that when
 * the process dies the reaper takes its running jobs back within about `ttlMs` rather than
 * waiting for each job's lease. One write per process per beat, whatever it runs. The first beat
 * (at start, before any job) also takes the worker id over from a previous process under it,
 * whose running jobs are then orphaned and taken back; a later beat never takes it over. A failed
 * beat is logged and the next one tries again; once no beat has succeeded for `ttlMs` by the local
 * clock (counted from when the last good beat was sent, so never later than the database's
 * deadline), `onLapsed` tells the worker to stop its executions, as a lost lease does.
 */
export class WorkerLiveness {
  /** This process among all that ever ran under the worker id. */
  readonly incarnation = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private failing = false;
  /** Local time by which the last good beat's lease on liveness ends. */
  private aliveUntilLocalMs = 0;
  private lapsed = false;

  constructor(private readonly d: LivenessDeps) {}

  get enabled(): boolean {
    return this.d.ttlMs > 0;
  }

  /** The first beat, then one every `everyMs`. Throws if the first fails (the table is missing, say). */
  async start(): Promise<void> {
    if (!this.enabled) return;
    const sentAt = Date.now();
    const first = await workerBeat(this.d.pool, this.d.workerId, this.incarnation, this.d.ttlMs, true).catch(
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
    this.aliveUntilLocalMs = sentAt + this.d.ttlMs;
    if (first.replaced)
      this.d.log.warn(
        { workerId: this.d.workerId, previous: first.replaced },
        'took the worker id over from a previous process: the jobs it had running are taken back now',
      );
    this.timer = setInterval(() => this.tick(), this.d.everyMs);
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

  private tick(): void {
    if (!this.lapsed && Date.now() >= this.aliveUntilLocalMs) {
      this.lapsed = true;
      this.d.log.error(
        { workerId: this.d.workerId, ttlMs: this.d.ttlMs },
        'liveness lapsed (no beat for the whole TTL): stopping running executions, the reaper may take them back',
      );
      this.d.onLapsed();
    }
    if (this.inFlight) return; // one beat at a time: a slow database skips a turn, not piles up
    this.inFlight = this.beat().finally(() => (this.inFlight = null));
  }

  private async beat(): Promise<void> {
    const sentAt = Date.now();
    try {
      const b = await workerBeat(this.d.pool, this.d.workerId, this.incarnation, this.d.ttlMs, false);
      if (b.aliveUntilMs === null) {
        // Another process took the row over since our last beat: a second live process configured
        // with the same SCHED_WORKER_ID, or this one was frozen and the id restarted elsewhere.
        this.d.log.error(
          { code: 'SCHED_E_WORKER_ID_SHARED', workerId: this.d.workerId, other: b.replaced },
          'another process holds this worker id: give every process its own SCHED_WORKER_ID (this one no longer counts as alive)',
        );
        return;
      }
      this.aliveUntilLocalMs = sentAt + this.d.ttlMs;
      this.lapsed = false;
      if (this.failing) this.d.log.info('liveness beats again');
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        this.d.log.warn({ err }, 'liveness beat failed; running jobs are still held by their leases');
      this.failing = true;
    }
  }
}
