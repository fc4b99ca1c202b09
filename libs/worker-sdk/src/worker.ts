import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import {
  negotiatedSessionTimeout,
  type GroupConsumer,
  type GroupConsumerOptions,
  type InboundMessage,
  type KafkaPort,
  type MessageProducer,
} from '@sched/kafka';
import type { Logger } from '@sched/logging';
import { resolvePolicy, type RetryPolicy } from '@sched/retry-policy';
import {
  leaseAcquireMany,
  outboxEmitReady,
  startsToAskAgain,
  type Lease,
  type LeaseRequest,
} from '@sched/store';
import { Completions } from './completions.js';
import type { WorkerConfig } from './config.js';
import { DedupeSet } from './dedupe-set.js';
import { ExecutionContext, type ExecutionDeps } from './execution-context.js';
import { MicroBatcher, retryOnDeadlock } from './micro-batch.js';
import { AdmissionWithdrawn, FairSlots, priorityClass, WaiterGroup } from './fair-slots.js';
import { RateGate } from './rate-gate.js';
import { Slots } from './slots.js';
import { WorkerLiveness } from './liveness.js';
import type { DispatchRecord, Handler, HandlerOptions, WorkerCodec } from './types.js';
import type { WorkerMetrics } from './worker-metrics.js';

export interface WorkerDeps {
  config: WorkerConfig;
  kafka: KafkaPort;
  pool: pg.Pool;
  codec: WorkerCodec;
  metrics: WorkerMetrics;
  log: Logger;
  /** A pool of one connection for the liveness beats (default: `pool`), so they never wait behind jobs. */
  livenessPool?: pg.Pool;
}

/** The dispatch consumer's options: this worker's group, fetch bounds, commits and session. */
export function dispatchConsumerOptions(
  c: WorkerConfig,
  topics: string[],
  sessionMs: number,
): GroupConsumerOptions {
  return {
    groupId: c.groupId,
    topics,
    maxWaitTimeMs: c.fetchMaxWaitMs,
    maxBytesPerPartition: c.fetchMaxBytesPerPartition,
    commitIntervalMs: c.commitIntervalMs,
    sessionTimeoutMs: sessionMs,
    heartbeatIntervalMs: Math.max(200, Math.floor(sessionMs / 5)),
    partitionsConsumedConcurrently: 12,
  };
}

/** Waits before asking again for a start whose dispatching transaction was not visible yet. */
const START_RETRY_DELAYS_MS = [5, 20, 100, 500, 2_000];
/**
 * Fetched records of one queue that may wait for admission at once, at least (`concurrency`
 * otherwise): enough for the fair admission to choose among, few enough that a burst's backlog
 * stays in Kafka rather than as decoded records in this process (queuing whole fetched batches, up
 * to ~60,000 records in a 100k burst, cost the worker ~25 % more CPU in the burst benchmark). Per
 * queue, so one slow queue (a low rate, say) does not stop the intake of the others.
 */
const WAITING_MIN = 1_024;
/** Completions that may wait for their batched write at once, at least (4 × concurrency otherwise). */
const COMPLETIONS_MIN = 1_024;

interface HandlerEntry {
  handler: Handler;
  options: HandlerOptions;
  policy: RetryPolicy;
  /** This queue's fetched records waiting for admission (bounded, see WAITING_MIN). */
  pending: Slots;
}

/**
 * Runs user handlers on dispatched jobs. Per record: dedupe on the event id → version check and
 * lease acquire in one conditional statement → handler with heartbeats, checkpoints, a cancel /
 * timeout signal → completion under the same owner + generation check. Lease starts and successful
 * completions of concurrent executions are coalesced into one statement per batch (at most
 * `dbBatchMax` jobs), so throughput is not bound by one commit per job. Retries are written to the
 * job row directly (state SCHEDULED at the backoff time) and announced to the partition owner with
 * an AttemptResult command so its wheel fires them on time; if that message is lost the
 * reconciler still finds the due retry.
 */
export class Worker {
  private readonly handlers = new Map<string, HandlerEntry>();
  private readonly dedupe: DedupeSet;
  private consumer: GroupConsumer | null = null;
  private producer: MessageProducer | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  /**
   * Executions in flight in this process, across every partition and queue; waiters are admitted
   * by priority class (weighted), then round robin over tenants, within each tenant's cap.
   */
  private readonly slots: FairSlots;
  /** Fetched batches whose records may still wait for admission: withdrawn when the worker stops. */
  private readonly batches = new Set<WaiterGroup>();
  /** Completions waiting to be written (bounded: a slow database holds handlers' slots back). */
  private readonly completing: Slots;
  /** Lease starts of concurrent executions, one statement (one commit) per batch. */
  private readonly starts: MicroBatcher<LeaseRequest, Lease | null>;
  /** Writes how executions ended (successes batched likewise). */
  private readonly completions: Completions;
  /** What every execution's context needs for its lease (renewals, checkpoints, loss). */
  private readonly leaseUpkeep: ExecutionDeps;
  /** This process's liveness row: a dead process's jobs are taken back without their leases. */
  private readonly liveness: WorkerLiveness;
  /** Contexts of the executions whose handlers run now (aborted together if liveness lapses). */
  private readonly running = new Set<ExecutionContext>();
  /** Handlers abandoned past their execution timeout that have not returned yet. */
  private abandonedRunning = 0;

  constructor(private readonly d: WorkerDeps) {
    this.dedupe = new DedupeSet(d.config.dedupeCapacity);
    this.slots = new FairSlots({
      size: d.config.concurrency,
      weights: d.config.priorityWeights,
      tenantCap: d.config.tenantConcurrency,
      tenantCaps: d.config.tenantConcurrencyLimits,
      onCapped: (tenant) => d.metrics.tenantCapped.inc({ tenant }),
      onRateWait: (queue) => d.metrics.rateLimited.inc({ queue }),
    });
    d.metrics.waitingForSlot.setSource(() => this.slots.waitingByClass());
    this.completing = new Slots(Math.max(COMPLETIONS_MIN, 4 * d.config.concurrency));
    const c = d.config;
    this.starts = new MicroBatcher(
      async (reqs) => {
        const granted = await retryOnDeadlock(() => leaseAcquireMany(d.pool, c.workerId, c.leaseTtlMs, reqs));
        return reqs.map((r) => granted.get(r.attemptId) ?? null);
      },
      c.dbBatchMax,
      2,
    );
    this.leaseUpkeep = {
      pool: d.pool,
      log: d.log,
      leaseTtlMs: c.leaseTtlMs,
      onLeaseLost: (queue) => d.metrics.leaseLost.inc({ queue }),
    };
    this.liveness = new WorkerLiveness({
      pool: d.livenessPool ?? d.pool,
      log: d.log,
      workerId: c.workerId,
      ttlMs: c.livenessTtlMs,
      everyMs: c.livenessEveryMs,
      // The reaper may be taking the running jobs back: stop them, as a lost lease does.
      onLapsed: () => {
        for (const ctx of this.running) ctx.abort('LEASE_LOST');
      },
    });
    this.completions = new Completions({
      ...d,
      producer: () => {
        if (!this.producer) throw new Error('worker not started: no producer');
        return this.producer;
      },
    });
  }

  handle(queue: string, handler: Handler, options: HandlerOptions = {}): this {
    if (this.consumer)
      throw Object.assign(new Error('register handlers before start()'), { code: 'SCHED_E_WORKER_STARTED' });
    const limit = options.concurrency;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
      throw Object.assign(
        new Error(`handler for ${queue}: concurrency must be a positive integer, got ${limit}`),
        {
          code: 'SCHED_E_BAD_OPTION',
        },
      );
    const { ratePerSec, rateBurst } = options;
    if (ratePerSec !== undefined && !(ratePerSec >= RateGate.MIN_PER_SEC && Number.isFinite(ratePerSec)))
      throw Object.assign(
        new Error(
          `handler for ${queue}: ratePerSec must be a number >= ${RateGate.MIN_PER_SEC}, got ${ratePerSec}`,
        ),
        {
          code: 'SCHED_E_BAD_OPTION',
        },
      );
    if (
      rateBurst !== undefined &&
      (ratePerSec === undefined || !Number.isInteger(rateBurst) || rateBurst < 1)
    )
      throw Object.assign(
        new Error(
          `handler for ${queue}: rateBurst must be a positive integer, with ratePerSec, got ${rateBurst}`,
        ),
        { code: 'SCHED_E_BAD_OPTION' },
      );
    this.handlers.set(queue, {
      handler,
      options,
      policy: resolvePolicy(options.retryPolicy),
      pending: new Slots(Math.max(WAITING_MIN, this.d.config.concurrency)),
    });
    this.slots.defineQueue(queue, { concurrency: limit, ratePerSec, rateBurst });
    return this;
  }

  async start(): Promise<void> {
    if (this.handlers.size === 0)
      throw Object.assign(new Error('no handler registered: call handle(queue, fn) first'), {
        code: 'SCHED_E_NO_HANDLER',
      });
    if (!(await outboxEmitReady(this.d.pool)))
      throw Object.assign(
        new Error(
          'workers write lifecycle events as outbox records, which needs store migration 014 (sched_outbox_emit): migrate the schema first (a scheduler does at start)',
        ),
        { code: 'SCHED_E_SCHEMA_BEHIND' },
      );
    // Before any start: from this beat on, a job of this id that started earlier is a previous
    // process's, orphaned.
    await this.liveness.start();
    try {
      await this.startKafka();
    } catch (err) {
      await this.liveness.stop(); // no worker behind the row: say it is gone
      throw err;
    }
  }

  private async startKafka(): Promise<void> {
    const c = this.d.config;
    this.producer = await this.d.kafka.producer({ idempotent: true });
    const topics = [...this.handlers.keys()].map((q) => c.dispatchTopicPrefix + q);
    const sessionMs = await negotiatedSessionTimeout(
      this.d.kafka,
      c.sessionTimeoutMs,
      'SCHED_WORKER_SESSION_TIMEOUT_MS',
      this.d.log,
    );
    this.consumer = this.d.kafka.groupConsumer(dispatchConsumerOptions(c, topics, sessionMs), {
      onBatch: (batch) => this.runBatch(batch.messages),
    });
    const consumer = this.consumer;
    this.d.metrics.consumerRestarts.setSource(() => consumer.restarts());
    await this.consumer.start();
  }

  async stop(): Promise<void> {
    // Records still waiting for admission are not started: their batches fail and stay uncommitted.
    for (const b of this.batches) b.withdraw(new Error('worker stopping'));
    await this.consumer?.stop();
    await Promise.allSettled([...this.inFlight]);
    await this.liveness.stop();
    await this.producer?.disconnect();
  }

  /**
   * Starts every record of a fetched batch once an execution slot is free for it (the process-wide
   * `concurrency`, and the queue's own `concurrency` when its handler sets one; a slot is held from
   * the start until the handler returns, not until its completion is written) and resolves once
   * every start is decided and durable: lease granted or refused, or the record skipped. Up to
   * `max(1024, concurrency)` records of each queue (from all its partitions' batches) wait for
   * admission at once, so when slots are short the fair admission (`FairSlots`: eligibility, then
   * priority class, then tenant) chooses among all of them, not only among the partitions' heads.
   * Handlers and completions go on in the background while the partition's next
   * batch is fetched, so a long job never holds up the jobs behind it. The offset may then commit:
   * from a durable start on, an execution that dies is recovered by the lease reaper, not by
   * redelivery (a redelivered record would be refused at start anyway). A start that fails
   * (database down) fails the batch, which comes again.
   */
  private async runBatch(messages: InboundMessage[]): Promise<void> {
    // Withdrawn, with every record of it still waiting for admission, if the worker stops or a
    // start fails (the batch is not committed and comes again). Not when the batch merely goes
    // stale: withdrawing then (tried) turned a 2 s event-loop stall in the 100k burst, which cost
    // the group membership, into failed batches, consumer restarts and re-fetches, and 16 % of the
    // burst started in 40 s instead of all of it in 20; the records go on starting, as before.
    const batch = new WaiterGroup();
    this.batches.add(batch);
    const starts: Promise<void>[] = [];
    try {
      for (const m of messages) {
        const accepted = await this.accept(m);
        if (!accepted) continue;
        const { rec, entry } = accepted;
        await entry.pending.acquire();
        if (batch.withdrawn) {
          // Withdrawn while this record waited for room: the batch fails and comes again.
          entry.pending.release();
          this.dedupe.forget(rec.eventId);
          throw batch.withdrawnBy instanceof Error ? batch.withdrawnBy : new Error('batch withdrawn');
        }
        let pending = true;
        const unpend = () => {
          if (!pending) return;
          pending = false;
          entry.pending.release();
        };
        let settle!: (err?: unknown) => boolean;
        const started = new Promise<void>((resolve, reject) => {
          let done = false;
          settle = (err) => {
            if (done) return false;
            done = true;
            if (err === undefined) resolve();
            else reject(err);
            return true;
          };
        });
        // Handled here as well: a start may fail while the loop still waits for room, before
        // Promise.all below is watching it.
        started.catch(() => undefined);
        starts.push(started);
        // The slot is held while the handler runs, not while its completion is written:
        // completions are batched and bounded on their own (`completing`).
        let held = false;
        const release = () => {
          if (!held) return;
          held = false;
          this.slots.release(rec.tenantId, rec.queue);
        };
        const run: Promise<void> = this.slots
          .acquire(rec.tenantId, rec.queue, priorityClass(rec.priority), batch)
          .then(() => {
            held = true;
            unpend();
            return this.execute(rec, entry, () => settle(), release);
          })
          .catch((err: unknown) => {
            unpend();
            if (settle(err)) {
              // Not started: let the redelivered record through the dedupe. A start that failed
              // (database down) fails the batch: the rest of it need not start now either.
              this.dedupe.forget(rec.eventId);
              if (!(err instanceof AdmissionWithdrawn)) batch.withdraw(err);
              return;
            }
            this.d.log.error(
              { err, jobId: rec.jobId, attempt: rec.attempt },
              'execution failed after its start was recorded; the lease reaper recovers the job',
            );
          })
          .finally(() => {
            release();
            this.inFlight.delete(run);
          });
        this.inFlight.add(run);
      }
      await Promise.all(starts);
    } catch (err) {
      // The batch comes again: records of it still waiting are not started now.
      batch.withdraw(err);
      throw err;
    } finally {
      this.batches.delete(batch);
    }
  }

  /** Decodes a record and finds its handler; null when it is skipped (undecodable, no handler, duplicate). */
  private async accept(m: InboundMessage): Promise<{ rec: DispatchRecord; entry: HandlerEntry } | null> {
    if (!m.value) return null;
    let rec: DispatchRecord;
    try {
      rec = await this.d.codec.decodeDispatch(m.value);
    } catch (err) {
      this.d.metrics.undecodable.inc({ topic: m.topic });
      this.d.log.error({ err, topic: m.topic, offset: m.offset }, 'undecodable dispatch record skipped');
      return null;
    }
    const entry = this.handlers.get(rec.queue);
    if (!entry) return null;
    if (!this.dedupe.add(rec.eventId)) {
      this.d.metrics.duplicates.inc({ queue: rec.queue });
      return null;
    }
    return { rec, entry };
  }

  /**
   * One record: lease start (then `started()`), handler, completion. `handlerDone` hands the
   * execution slots back once the handler has returned and a completion slot is held.
   */
  private async execute(
    rec: DispatchRecord,
    entry: HandlerEntry,
    started: () => void,
    handlerDone: () => void,
  ) {
    const c = this.d.config;
    const q = { queue: rec.queue };
    const attemptId = randomUUID();
    const request = { jobId: rec.jobId, version: rec.version, attempt: rec.attempt, attemptId };
    let lease = await this.starts.submit(request);
    // A refusal may only be early: the record can outrun the visibility of the transaction that
    // wrote it (see startsToAskAgain, which also counts a job that has become startable since).
    // Ask again a few times before giving up; if it never becomes visible, the reaper
    // re-dispatches the job when its dispatch lease runs out.
    for (let i = 0; !lease && i < START_RETRY_DELAYS_MS.length; i++) {
      if (!(await startsToAskAgain(this.d.pool, [request])).has(rec.jobId)) break;
      this.d.metrics.startNotYetVisible.inc(q);
      await new Promise((r) => setTimeout(r, START_RETRY_DELAYS_MS[i]));
      lease = await this.starts.submit(request);
    }
    started();
    if (!lease) {
      // Cancelled, rescheduled, or this attempt was started already: never execute.
      this.d.metrics.refusedStart.inc(q);
      return;
    }
    const startedAtMs = Date.now();
    this.d.metrics.started.inc(q);
    this.d.metrics.queueWait.observe(q, Math.max(0, startedAtMs - rec.claimedAtMs) / 1000);

    const timeoutMs = rec.executionTimeoutMs ?? entry.options.executionTimeoutMs ?? c.executionTimeoutMs;
    const ctx = new ExecutionContext(this.leaseUpkeep, rec, lease, attemptId, c.heartbeatEveryMs, timeoutMs);

    let error: unknown = null;
    this.running.add(ctx);
    const handling = (async () => {
      try {
        await entry.handler(rec, ctx);
      } catch (err) {
        error = err;
      } finally {
        this.running.delete(ctx);
        ctx.settle();
      }
    })();
    if (await this.abandoned(handling, rec, timeoutMs)) {
      handlerDone();
      return;
    }
    const reason = ctx.abortReason;
    const seconds = (Date.now() - startedAtMs) / 1000;
    // Backpressure: a handler's slot passes on only when its completion has room to wait.
    await this.completing.acquire();
    handlerDone();
    try {
      await this.completions.record(rec, entry.policy, lease, { error, reason, startedAtMs, seconds });
    } finally {
      this.completing.release();
    }
  }

  /**
   * Waits for the handler, or until `abandonAfterTimeoutMs` past its execution timeout: then, if
   * fewer than `concurrency` handlers are abandoned already, it is abandoned (true: its slot goes
   * back, no completion is recorded: its lease stopped being renewed at the timeout and the
   * scheduler takes the job back as TIMED_OUT). Otherwise it keeps its slot until it returns.
   */
  private async abandoned(handling: Promise<void>, rec: DispatchRecord, timeoutMs: number): Promise<boolean> {
    const grace = this.d.config.abandonAfterTimeoutMs;
    if (grace === 0) {
      await handling;
      return false;
    }
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      handling.then(() => false),
      new Promise<true>((resolve) => (timer = setTimeout(resolve, timeoutMs + grace, true))),
    ]);
    clearTimeout(timer);
    if (!late) return false;
    if (this.abandonedRunning >= this.d.config.concurrency) {
      this.d.log.error(
        { jobId: rec.jobId, queue: rec.queue, abandoned: this.abandonedRunning },
        'a handler ignores its execution timeout and too many are abandoned already: it keeps its slot',
      );
      await handling;
      return false;
    }
    this.abandonedRunning++;
    this.d.metrics.abandoned.inc({ queue: rec.queue });
    this.d.metrics.abandonedRunning.set(this.abandonedRunning);
    this.d.log.warn(
      { jobId: rec.jobId, queue: rec.queue, attempt: rec.attempt, timeoutMs, graceMs: grace },
      'handler still running past its execution timeout (it ignores ctx.signal): abandoned, its slot given back',
    );
    void handling.finally(() => {
      this.abandonedRunning--;
      this.d.metrics.abandonedRunning.set(this.abandonedRunning);
      this.d.log.info(
        { jobId: rec.jobId, queue: rec.queue },
        'an abandoned handler returned; its result is ignored',
      );
    });
    return true;
  }
}
