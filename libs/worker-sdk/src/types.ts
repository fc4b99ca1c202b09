import type { Logger } from '@sched/logging';
import type { PolicyLayer } from '@sched/retry-policy';

/** A dispatched job as the handler sees it. */
export interface Job {
  jobId: string;
  queue: string;
  tenantId: string;
  payload: Buffer;
  version: number;
  attempt: number;
  dueAtMs: number;
  claimedAtMs: number;
  priority: number;
  businessKey: string | null;
  headers: Record<string, string>;
  scheduleId: string | null;
  occurrenceAtMs: number | null;
}

export interface JobContext {
  /**
   * The same for every attempt and redelivery of the job: its businessKey when set, else its job id.
   * Pass it to downstream APIs that deduplicate (payment providers do), so that a retry after an
   * ambiguous failure cannot repeat the side effect.
   */
  idempotencyKey: string;
  /** The user's business key when the job has one: the key that survives every retry path. */
  businessKey: string | null;
  attemptId: string;
  /** The lease's fencing token. */
  fencingToken: { owner: string; generation: number };
  /** Extends the lease now (it is also renewed automatically every heartbeat interval). Throws when the lease is lost. */
  heartbeat(): Promise<void>;
  /** Persists progress with the lease check; a retry after a crash starts from it. */
  checkpoint(state: unknown): Promise<void>;
  /** The last checkpoint saved by any earlier attempt of this job, or null. */
  lastCheckpoint: unknown;
  /** Aborted on cancel, lease loss or execution timeout (`signal.reason` says which). */
  signal: AbortSignal;
  /** Reads the source of truth: has this job been cancelled (or its lease lost)? */
  isCancelled(): Promise<boolean>;
  log: Logger;
}

export type Handler = (job: Job, ctx: JobContext) => Promise<void>;

export interface HandlerOptions {
  /**
   * Most executions of this queue in flight at once in this process (a downstream that takes only
   * so many); the worker's own `concurrency` bounds all queues together. Default: no queue limit.
   */
  concurrency?: number;
  /**
   * Most executions of this queue started per second in this process (a downstream API with a rate
   * limit): a burst of due jobs is spread out rather than sent at once. Default: no limit.
   */
  ratePerSec?: number;
  /** With `ratePerSec`: how many may start at once before the rate applies. Default 1. */
  rateBurst?: number;
  /** Retry policy for this queue (per-job `retryPolicy` overrides it). */
  retryPolicy?: PolicyLayer;
  /** Execution timeout when the job does not carry one. */
  executionTimeoutMs?: number;
}

/** The dispatch record, decoded. */
export interface DispatchRecord extends Job {
  eventId: string;
  epoch: number;
  partition: number;
  idempotencyKey: string;
  executionTimeoutMs: number | null;
}

export interface AttemptReport {
  jobId: string;
  tenantId: string;
  version: number;
  attempt: number;
  attemptId: string;
  leaseOwner: string;
  leaseGeneration: number;
  outcome: 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'TIMED_OUT';
  failureClass: 'TRANSIENT' | 'THROTTLED' | 'PERMANENT' | 'UNKNOWN' | null;
  error: string | null;
  retryAfterMs: number | null;
  startedAtMs: number;
  finishedAtMs: number;
  workerId: string;
}

/** The worker's view of the wire format. */
export interface WorkerCodec {
  decodeDispatch(value: Buffer): Promise<DispatchRecord>;
  /** An AttemptResult command for the partition owner (Kafka value). */
  encodeAttemptResult(r: AttemptReport): Buffer;
  /** A lifecycle event for sched.events. */
  encodeEvent(e: {
    eventId: string;
    jobId: string;
    tenantId: string;
    type: 'SUCCEEDED' | 'FAILED' | 'RETRY_SCHEDULED' | 'DEAD_LETTERED';
    version: number;
    attempt: number;
    atMs: number;
    detail: string | null;
  }): Buffer;
}
