import { randomUUID } from 'node:crypto';
import type { Contracts, JobEvent, JobEventType } from '@sched/contracts';
import type { GroupConsumer, KafkaPort } from '@sched/kafka';
import { WaitTimeoutError } from './client-error.js';

/** Events remembered for `waitFor`, by job (the oldest jobs are forgotten first). */
const REMEMBERED_JOBS = 100_000;

interface Waiter {
  states: ReadonlySet<string>;
  resolve(event: JobEvent): void;
}

/**
 * Follows the events topic from its end (a group of its own) and remembers the recent events per
 * job, so `waitFor` answers an event seen before it was asked as well as one still to come.
 */
export class JobEventWatcher {
  private events: GroupConsumer | null = null;
  private eventsReady: Promise<void> | null = null;
  private readonly seen = new Map<string, JobEvent[]>();
  private readonly waiters = new Map<string, Waiter[]>();

  constructor(
    private readonly kafka: KafkaPort,
    private readonly contracts: Contracts,
    private readonly eventsTopic: string,
  ) {}

  /**
   * Resolves with the first lifecycle event of `jobId` whose type is one of `states`, seen on the
   * events topic since this watcher started. Rejects with WaitTimeoutError after `timeoutMs`.
   *
   * The platform writes `CANCELLED`, `RESCHEDULED`, `EXPIRED`, `RETRY_SCHEDULED` and
   * `DEAD_LETTERED`; `SUCCEEDED` only from workers started with `SCHED_WORKER_LIFECYCLE_EVENTS=all`
   * (an outbox row per job). A create has no event: ask `GET /v1/commands/:commandId` for that.
   */
  async waitFor(
    jobId: string,
    states: JobEventType | readonly JobEventType[],
    timeoutMs: number,
  ): Promise<JobEvent> {
    const wanted: ReadonlySet<string> = new Set(typeof states === 'string' ? [states] : states);
    await this.watch();
    const hit = this.seen.get(jobId)?.find((e) => wanted.has(e.type));
    if (hit) return hit;
    return new Promise<JobEvent>((resolve, reject) => {
      const waiter: Waiter = {
        states: wanted,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
      };
      const timer = setTimeout(() => {
        const list = this.waiters.get(jobId)?.filter((w) => w !== waiter) ?? [];
        if (list.length > 0) this.waiters.set(jobId, list);
        else this.waiters.delete(jobId);
        reject(new WaitTimeoutError(jobId, [...wanted], timeoutMs));
      }, timeoutMs);
      const list = this.waiters.get(jobId) ?? [];
      list.push(waiter);
      this.waiters.set(jobId, list);
    });
  }

  /** Starts following the events topic (once), from its end, and waits for the assignment. */
  watch(): Promise<void> {
    if (this.eventsReady) return this.eventsReady;
    let assigned!: () => void;
    const ready = new Promise<void>((resolve) => (assigned = resolve));
    this.events = this.kafka.groupConsumer(
      {
        groupId: `sched-client-events-${randomUUID()}`,
        topics: [this.eventsTopic],
        fromBeginning: false,
        maxWaitTimeMs: 50,
        sessionTimeoutMs: 10_000,
        heartbeatIntervalMs: 1_000,
      },
      {
        onAssigned: async () => assigned(),
        onBatch: async (batch) => {
          for (const m of batch.messages) {
            if (!m.value) continue;
            const event = await this.contracts.decodeEvent(m.value).catch(() => null);
            if (event) this.remember(event);
          }
        },
      },
    );
    // The group's offsets are set at the first fetch after the assignment: a short wait so an event
    // of a command sent right after `connect` is not before the point followed from.
    this.eventsReady = this.events
      .start()
      .then(() => ready)
      .then(() => new Promise((r) => setTimeout(r, 500)));
    return this.eventsReady;
  }

  private remember(event: JobEvent): void {
    const list = this.seen.get(event.jobId);
    if (list) list.push(event);
    else {
      if (this.seen.size >= REMEMBERED_JOBS) this.seen.delete(this.seen.keys().next().value!);
      this.seen.set(event.jobId, [event]);
    }
    const waiting = this.waiters.get(event.jobId);
    if (!waiting) return;
    const rest = waiting.filter((w) => {
      if (!w.states.has(event.type)) return true;
      w.resolve(event);
      return false;
    });
    if (rest.length > 0) this.waiters.set(event.jobId, rest);
    else this.waiters.delete(event.jobId);
  }

  async stop(): Promise<void> {
    await this.events?.stop();
  }
}
