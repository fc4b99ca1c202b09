import { randomUUID } from 'node:crypto';
import type { OutboxRow } from '@sched/store';
import type { JobEventFields, SchedulerCodec } from '@sched/command-rules';

/**
 * A lifecycle event of the scheduler's (CANCELLED, RESCHEDULED, EXPIRED) as an outbox row for
 * `sched.events`, written in the transaction of the transition it records.
 */
export function jobEventRow(codec: SchedulerCodec, e: Omit<JobEventFields, 'eventId' | 'atMs'>): OutboxRow {
  const eventId = randomUUID();
  return {
    id: eventId,
    aggregateType: 'events',
    aggregateId: e.jobId,
    type: 'JobEvent',
    payload: codec.encodeEvent({ ...e, eventId, atMs: Date.now() }),
    jobId: e.jobId,
    version: e.version,
    attempt: e.attempt,
    tenantId: e.tenantId,
  };
}
