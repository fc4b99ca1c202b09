import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import {
  NO_ADMISSION,
  type ClaimAdmission,
  jobClaimDueDispatch,
  jobOverdueFair,
  type ClaimedJob,
  type DispatchedJob,
  type OutboxRow,
  type OverdueJob,
} from '@sched/store';
import type { SchedulerCodec } from '@sched/command-rules';
import type { PartitionRuntime } from './partition-runtime.js';
import type { DueEntry } from './due-index.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';

export interface ClaimOutcome {
  claimed: DispatchedJob[];
  /** Ids asked for that were not due yet in database time: the caller puts them back. */
  notYetDue: { jobId: string; dueMs: number }[];
}

/** One partition's share of a firing round. */
export interface ClaimGroup {
  rt: PartitionRuntime;
  entries: DueEntry[];
}

export interface RoundOutcome {
  /** Per partition that took part: what was claimed and what must go back into its index. */
  outcomes: Map<number, ClaimOutcome>;
  /** Partitions whose epoch moved on: the caller releases them; nothing of theirs was written. */
  fenced: PartitionRuntime[];
  /** Where the round's time went, ms: a pool connection, then the one statement (with its commit). */
  phasesMs: RoundPhases;
}

export interface RoundPhases {
  connect: number;
  claim: number;
}

/**
 * The key a worker passes to downstream APIs: the job's businessKey when it has one, else its job id.
 * The same for every attempt of the job (Dispatch.avsc), so that a retry after an ambiguous failure
 * converges on the key of the call that may already have happened.
 */
export function idempotencyKeyOf(j: Pick<ClaimedJob, 'jobId' | 'businessKey'>): string {
  return j.businessKey ?? j.jobId;
}

/** The outbox row of one claimed job: its Dispatch record, routed to `sched.dispatch.<queue>`. */
export function dispatchOutboxRow(
  codec: SchedulerCodec,
  j: ClaimedJob,
  partition: number,
  epoch: number,
): OutboxRow {
  const eventId = randomUUID();
  return {
    id: eventId,
    aggregateType: `dispatch.${j.queue}`,
    aggregateId: j.jobId,
    type: 'Dispatch',
    payload: codec.encodeDispatch({
      eventId,
      jobId: j.jobId,
      tenantId: j.tenantId,
      queue: j.queue,
      version: j.version,
      attempt: j.attempt,
      epoch,
      partition,
      dueAtMs: j.dueAtMs,
      claimedAtMs: j.claimedAtMs,
      payload: j.payload,
      priority: j.priority,
      businessKey: j.businessKey,
      idempotencyKey: idempotencyKeyOf(j),
      executionTimeoutMs: j.executionTimeoutMs,
      scheduleId: j.scheduleId,
      occurrenceAtMs: j.occurrenceAtMs,
      headers: j.headers,
    }),
    jobId: j.jobId,
    version: j.version,
    attempt: j.attempt,
    tenantId: j.tenantId,
  };
}

/**
 * Claim + outbox, fenced, with no Kafka call (Debezium publishes after commit). A firing round is
 * one statement that Postgres commits on its own (`jobClaimDueDispatch`: the Dispatch records'
 * fields are emitted in SQL, the connector's router encodes them); reconciliation claims and encodes in two statements of one transaction.
 */
export class Claimer {
  /**
   * @param pool reads and the catch-up's claims.
   * @param firePool the wheel's firing rounds: a pool of their own (one connection per round slot,
   *   kept open and warmed by `warm`) so that a round never waits for a connection behind wheel
   *   loads, command applies or the catch-up, nor for a new backend's first plan of the claim.
   */
  constructor(
    private readonly pool: pg.Pool,
    private readonly codec: SchedulerCodec,
    private readonly metrics: SchedulerMetrics,
    private readonly dispatchLeaseMs: number,
    private readonly firePool: pg.Pool = pool,
    /** Admission control (see `Admission`): how many jobs of each queue a claim may take. */
    private readonly admission: {
      limits(): ClaimAdmission;
      full(): readonly string[];
      onClaimed(jobs: readonly { queue: string }[]): void;
    } = { limits: () => NO_ADMISSION, full: () => [], onClaimed: () => undefined },
  ) {}

  /**
   * Opens `connections` connections of the firing pool at once and runs the firing statement on
   * each with nothing to claim, so the first real round after an assignment finds a connection
   * whose backend has the statement prepared and its catalogs cached (measured on a busy host: the
   * first round of a process that had not done so waited 560 ms for a connection and took 400 ms).
   */
  async warm(connections: number): Promise<void> {
    if (this.firePool === this.pool) return; // shared: nothing of its own to warm
    const opened = await Promise.allSettled(
      Array.from({ length: connections }, () => this.firePool.connect()),
    );
    const clients = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    try {
      const failed = opened.find((o) => o.status === 'rejected');
      if (failed) throw failed.reason;
      await Promise.all(
        clients.map((c) => jobClaimDueDispatch(c, [], [], this.dispatchLeaseMs, this.codec.dispatchHeader())),
      );
    } finally {
      for (const c of clients) c.release();
    }
  }

  /**
   * One firing round across partitions: the due wheel entries of every partition that has some, in
   * one statement however many partitions take part. It claims, writes each claimed job's outbox
   * row, and reports database time and which epochs are current; the ownership rows of the current
   * partitions are held FOR KEY SHARE until it commits.
   */
  async claimRound(groups: ClaimGroup[], source: 'wheel' | 'reconcile' = 'wheel'): Promise<RoundOutcome> {
    const t0 = performance.now();
    // As the round starts: its entries came from the first window read when a partition settled.
    const settling = new Set(groups.filter((g) => g.rt.settling).map((g) => g.rt.partition));
    const client = await (source === 'wheel' ? this.firePool : this.pool).connect();
    const tWork = performance.now();
    let result: Awaited<ReturnType<typeof jobClaimDueDispatch>>;
    try {
      result = await jobClaimDueDispatch(
        client,
        groups.map((g) => ({ partition: g.rt.partition, epoch: g.rt.epoch })),
        groups.flatMap((g) => g.entries.map((e) => e.jobId)),
        this.dispatchLeaseMs,
        this.codec.dispatchHeader(),
        this.admission.limits(),
      );
    } finally {
      client.release();
    }
    const tEnd = performance.now();
    const { nowMs, current, claimed } = result;
    this.admission.onClaimed(claimed);
    const live = groups.filter((g) => current.has(g.rt.partition));
    const fenced = groups.filter((g) => !current.has(g.rt.partition)).map((g) => g.rt);
    for (let i = 0; i < fenced.length; i++) this.metrics.fencedWrites.inc({ statement: 'job_claim_due' });
    const outcomes = new Map<number, ClaimOutcome>();
    for (const g of live) outcomes.set(g.rt.partition, { claimed: [], notYetDue: [] });
    for (const j of claimed) outcomes.get(j.partition)!.claimed.push(j);
    for (const g of live) {
      const out = outcomes.get(g.rt.partition)!;
      // Misses count the wheel's rounds only: the catch-up's plan is read ahead of its claims, and
      // rows the wheel or a command took meanwhile are expected there.
      if (out.claimed.length < g.entries.length && source === 'wheel') {
        const got = new Set(out.claimed.map((c) => c.jobId));
        out.notYetDue = g.entries.filter((e) => !got.has(e.jobId) && e.dueMs > nowMs);
        const missed = g.entries.length - out.claimed.length;
        if (out.notYetDue.length > 0)
          this.metrics.claimMisses.inc({ reason: 'not_yet_due' }, out.notYetDue.length);
        if (missed > out.notYetDue.length) {
          const reason = settling.has(g.rt.partition) ? 'handoff' : 'gone';
          this.metrics.claimMisses.inc({ reason }, missed - out.notYetDue.length);
        }
      }
    }
    this.observe(claimed, source);
    for (const [p, out] of outcomes)
      if (out.claimed.length > 0)
        this.metrics.partitionClaimed.inc({ partition: String(p) }, out.claimed.length);
    return { outcomes, fenced, phasesMs: { connect: tWork - t0, claim: tEnd - tWork } };
  }

  /**
   * Reconciliation and catch-up, the read: overdue jobs the wheel did not claim, across the given
   * partitions, in drain order (priority, then tenants in turn; `jobOverdueFair`). The caller
   * claims them with `claimRound(…, 'reconcile')`: fenced, SKIP LOCKED, state and due re-checked.
   */
  overdue(rts: PartitionRuntime[], limit: number, graceMs: number): Promise<OverdueJob[]> {
    return jobOverdueFair(
      this.pool,
      rts.map((r) => r.partition),
      limit,
      graceMs,
      this.admission.full(),
    );
  }

  /** Claim metrics: batch size, count by source (and by partition when given), due → claim lag. */
  observe(
    claimed: readonly Pick<ClaimedJob, 'claimedAtMs' | 'dueAtMs'>[],
    source: string,
    partition?: number,
  ): void {
    if (claimed.length === 0) return;
    this.metrics.claimBatch.observe(claimed.length);
    this.metrics.claimed.inc({ source }, claimed.length);
    if (partition !== undefined)
      this.metrics.partitionClaimed.inc({ partition: String(partition) }, claimed.length);
    for (const j of claimed)
      this.metrics.schedulingLag.observe(Math.max(0, j.claimedAtMs - j.dueAtMs) / 1000);
  }
}
