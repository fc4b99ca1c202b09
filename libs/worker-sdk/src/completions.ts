import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { MessageProducer } from '@sched/kafka';
import type { Logger } from '@sched/logging';
import {
  classifyFailure,
  nextRetryAt,
  resolvePolicy,
  withMaxAttempts,
  type FailureClass,
  type PolicyLayer,
  type RetryPolicy,
} from '@sched/retry-policy';
import { attemptEnd, jobComplete, jobSucceedMany, type Lease, type SuccessReport } from '@sched/store';
import type { WorkerConfig } from './config.js';
import { MicroBatcher, retryOnDeadlock } from './micro-batch.js';
import type { DispatchRecord, WorkerCodec } from './types.js';
import type { WorkerMetrics } from './worker-metrics.js';

export interface CompletionDeps {
  config: WorkerConfig;
  pool: pg.Pool;
  codec: WorkerCodec;
  metrics: WorkerMetrics;
  log: Logger;
  /** The worker's producer (for AttemptResult commands); available once the worker started. */
  producer(): MessageProducer;
}

/** How an execution ended, as the worker saw it. */
export interface ExecutionEnd {
  error: unknown;
  /** Why the execution was aborted (CANCELLED, LEASE_LOST, TIMED_OUT), or null. */
  reason: string | null;
  startedAtMs: number;
  seconds: number;
}

/**
 * The end of an execution, written under the lease's owner + generation fence: successes batched
 * into one statement per batch (at most `dbBatchMax`), failures classified and either scheduled for
 * a retry (job row back to SCHEDULED, the partition owner told with an AttemptResult) or
 * dead-lettered, cancellations and lost leases closed on their attempt row. A completion that the
 * fence refuses (the lease was reclaimed) is counted, never applied.
 */
export class Completions {
  /** Successful completions of concurrent executions, one statement (one commit) per batch. */
  private readonly successes: MicroBatcher<SuccessReport, boolean>;

  constructor(private readonly d: CompletionDeps) {
    this.successes = new MicroBatcher(
      async (reports) => {
        const accepted = await retryOnDeadlock(() => jobSucceedMany(d.pool, reports));
        return reports.map((r) => accepted.has(r.lease.attemptId));
      },
      d.config.dbBatchMax,
      2,
      d.config.completionLingerMs,
    );
  }

  /** Records the end of an execution: success, failure (retry or dead letter), or the lease lost. */
  async record(rec: DispatchRecord, queuePolicy: RetryPolicy, lease: Lease, end: ExecutionEnd) {
    const q = { queue: rec.queue };
    const { error, reason, startedAtMs, seconds } = end;
    if (reason === 'CANCELLED' || reason === 'LEASE_LOST') {
      this.d.metrics.execution.observe({ ...q, outcome: reason }, seconds);
      await attemptEnd(
        this.d.pool,
        lease,
        reason === 'CANCELLED' ? 'CANCELLED' : 'LEASE_LOST',
        error ? String(error) : null,
      );
      if (reason === 'LEASE_LOST') this.d.metrics.refusedCompletion.inc(q);
      return;
    }
    if (error === null && reason === null) {
      this.d.metrics.execution.observe({ ...q, outcome: 'SUCCEEDED' }, seconds);
      const ok = await this.successes.submit({ lease, event: this.event(rec, 'SUCCEEDED', null) });
      if (!ok) this.d.metrics.refusedCompletion.inc(q);
      else this.d.metrics.dueToSuccess.observe(q, Math.max(0, Date.now() - rec.dueAtMs) / 1000);
      return;
    }
    await this.fail(rec, lease, queuePolicy, error, reason === 'TIMED_OUT', startedAtMs, seconds);
  }

  /** The lifecycle event a completion writes (through the outbox, only if the lease fence holds). */
  private event(rec: DispatchRecord, type: LifecycleType, detail: string | null) {
    const mode = this.d.config.lifecycleEvents;
    if (mode === 'none' || (mode === 'failures' && type === 'SUCCEEDED')) return null;
    const id = randomUUID();
    const payload = this.d.codec.encodeEvent({
      eventId: id,
      jobId: rec.jobId,
      tenantId: rec.tenantId,
      type,
      version: rec.version,
      attempt: rec.attempt,
      atMs: Date.now(),
      detail,
    });
    return { id, payload, tenantId: rec.tenantId, version: rec.version, attempt: rec.attempt };
  }

  private async fail(
    rec: DispatchRecord,
    lease: Lease,
    queuePolicy: RetryPolicy,
    error: unknown,
    timedOut: boolean,
    startedAtMs: number,
    seconds: number,
  ) {
    const q = { queue: rec.queue };
    const classified = timedOut
      ? { failureClass: 'UNKNOWN' as FailureClass, retryAfterMs: null, message: `execution timed out` }
      : classifyFailure(error);
    const merged = resolvePolicy(queuePolicy, lease.retryPolicy as PolicyLayer | null);
    const policy = lease.maxAttempts ? withMaxAttempts(merged, lease.maxAttempts) : merged;
    const decision = nextRetryAt(
      Date.now(),
      rec.attempt,
      policy,
      classified.failureClass,
      classified.retryAfterMs,
      Math.random,
    );
    const outcome = timedOut ? 'TIMED_OUT' : 'FAILED';
    this.d.metrics.execution.observe({ ...q, outcome }, seconds);
    const ok = await jobComplete(this.d.pool, lease, {
      outcome,
      failureClass: classified.failureClass,
      error: classified.message.slice(0, 4000),
      retryAtMs: decision.retry ? decision.atMs : null,
      event: this.event(
        rec,
        decision.retry ? 'RETRY_SCHEDULED' : 'DEAD_LETTERED',
        classified.message.slice(0, 500),
      ),
      deadLetter: decision.retry
        ? null
        : {
            fingerprint: fingerprint(classified.failureClass, classified.message),
            poisonAfterReplays: this.d.config.poisonAfterReplays,
          },
    });
    if (!ok) {
      this.d.metrics.refusedCompletion.inc(q);
      return;
    }
    if (!decision.retry) {
      this.d.metrics.deadLettered.inc({ ...q, class: classified.failureClass });
      return;
    }
    this.d.metrics.retries.inc({ ...q, class: classified.failureClass });
    // Tell the partition owner so its wheel fires the retry on time.
    await this.d
      .producer()
      .send(this.d.config.commandsTopic, [
        {
          key: rec.jobId,
          value: this.d.codec.encodeAttemptResult({
            jobId: rec.jobId,
            tenantId: rec.tenantId,
            version: rec.version,
            attempt: rec.attempt,
            attemptId: lease.attemptId,
            leaseOwner: lease.owner,
            leaseGeneration: lease.generation,
            outcome,
            failureClass: classified.failureClass,
            error: classified.message.slice(0, 1000),
            retryAfterMs: classified.retryAfterMs,
            startedAtMs,
            finishedAtMs: Date.now(),
            workerId: this.d.config.workerId,
          }),
        },
      ])
      .catch((err: unknown) =>
        this.d.log.warn(
          { err, jobId: rec.jobId },
          'AttemptResult not sent; the reconciler will find the retry',
        ),
      );
  }
}

export type LifecycleType = 'SUCCEEDED' | 'RETRY_SCHEDULED' | 'DEAD_LETTERED';

/** "Failed the same way": the class plus the error text with numbers and ids blanked out. */
export function fingerprint(failureClass: string, message: string): string {
  const norm = message
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<id>')
    .replace(/\d+/g, '<n>')
    .slice(0, 300);
  return `${failureClass}:${norm}`;
}
