import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import {
  FencedError,
  inTransaction,
  jobClaimDue,
  jobReconcileDue,
  outboxInsert,
  type ClaimedJob,
  type OutboxRow,
} from '@sched/store';
import type { SchedulerCodec } from './commands.js';
import type { PartitionRuntime } from './partition-runtime.js';
import type { SchedulerMetrics } from './scheduler-metrics.js';

export interface ClaimOutcome {
  claimed: ClaimedJob[];
  /** Ids asked for that were not due yet in database time: the caller puts them back. */
  notYetDue: { jobId: string; dueMs: number }[];
}

/**
 * Claim + outbox in one short, fenced transaction: no Kafka call inside it (Debezium publishes
 * after commit). One extra statement reads database time and checks the epoch, so a refused
 * claim is told apart from a fenced owner.
 */
export class Claimer {
  constructor(
    private readonly pool: pg.Pool,
    private readonly codec: SchedulerCodec,
    private readonly metrics: SchedulerMetrics,
    private readonly dispatchLeaseMs: number,
  ) {}

  /** Claims the given wheel entries of one partition. Throws FencedError when the epoch moved on. */
  async claimEntries(
    rt: PartitionRuntime,
    entries: { jobId: string; dueMs: number }[],
  ): Promise<ClaimOutcome> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{ now_ms: number; current: boolean }>(
        `SELECT (extract(epoch FROM now()) * 1000)::float8 AS now_ms,
                EXISTS (SELECT 1 FROM partition_owner WHERE partition = $1 AND epoch = $2) AS current`,
        [rt.partition, rt.epoch],
      );
      const head = rows[0]!;
      if (!head.current) {
        this.metrics.fencedWrites.inc({ statement: 'job_claim_due' });
        throw new FencedError(rt.partition, rt.epoch, 'job_claim_due');
      }
      const claimed = await jobClaimDue(
        client,
        rt.partition,
        rt.epoch,
        entries.map((e) => e.jobId),
        this.dispatchLeaseMs,
      );
      await this.writeOutbox(client, rt, claimed);
      let notYetDue: { jobId: string; dueMs: number }[] = [];
      if (claimed.length < entries.length) {
        const got = new Set(claimed.map((c) => c.jobId));
        // Only ids whose index due time is still ahead of database time come back; cancelled,
        // rescheduled or already claimed ones are dropped (the database is the truth).
        notYetDue = entries.filter((e) => !got.has(e.jobId) && e.dueMs > head.now_ms);
      }
      this.observe(claimed, 'wheel');
      return { claimed, notYetDue };
    });
  }

  /**
   * Reconciliation and catch-up: claims overdue jobs the wheel does not hold, across the given
   * partitions, highest priority first, SKIP LOCKED; outbox rows written per partition, fenced.
   */
  async reconcile(
    rts: PartitionRuntime[],
    limit: number,
    graceMs: number,
  ): Promise<(ClaimedJob & { partition: number })[]> {
    return inTransaction(this.pool, async (client) => {
      const claimed = await jobReconcileDue(
        client,
        rts.map((r) => ({ partition: r.partition, epoch: r.epoch })),
        limit,
        this.dispatchLeaseMs,
        graceMs,
      );
      for (const rt of rts) {
        const mine = claimed.filter((c) => c.partition === rt.partition);
        await this.writeOutbox(client, rt, mine);
      }
      this.observe(claimed, 'reconcile');
      return claimed;
    });
  }

  private async writeOutbox(
    client: pg.ClientBase,
    rt: PartitionRuntime,
    claimed: ClaimedJob[],
  ): Promise<void> {
    if (claimed.length === 0) return;
    const rows: OutboxRow[] = claimed.map((j) => {
      const eventId = randomUUID();
      return {
        id: eventId,
        aggregateType: `dispatch.${j.queue}`,
        aggregateId: j.jobId,
        type: 'Dispatch',
        payload: this.codec.encodeDispatch({
          eventId,
          jobId: j.jobId,
          tenantId: j.tenantId,
          queue: j.queue,
          version: j.version,
          attempt: j.attempt,
          epoch: rt.epoch,
          partition: rt.partition,
          dueAtMs: j.dueAtMs,
          claimedAtMs: j.claimedAtMs,
          payload: j.payload,
          priority: j.priority,
          businessKey: j.businessKey,
          idempotencyKey: `${j.jobId}:${j.attempt}`,
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
    });
    const inserted = await outboxInsert(client, rt.partition, rt.epoch, rows);
    if (inserted !== rows.length) {
      this.metrics.fencedWrites.inc({ statement: 'outbox_insert' });
      throw new FencedError(rt.partition, rt.epoch, 'outbox_insert');
    }
  }

  private observe(claimed: ClaimedJob[], source: string): void {
    if (claimed.length === 0) return;
    this.metrics.claimBatch.observe(claimed.length);
    this.metrics.claimed.inc({ source }, claimed.length);
    for (const j of claimed)
      this.metrics.schedulingLag.observe(Math.max(0, j.claimedAtMs - j.dueAtMs) / 1000);
  }
}
