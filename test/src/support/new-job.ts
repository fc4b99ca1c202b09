import type { NewJob } from '@sched/store';

/** A plain job for store-level tests: default tenant and queue, empty payload, no options. */
export const newJob = (jobId: string, dueAtMs: number): NewJob => ({
  jobId,
  tenantId: 'default',
  queue: 'default',
  dueAtMs,
  priority: 0,
  payload: Buffer.from('{}'),
  businessKey: null,
  maxAttempts: null,
  retryPolicy: null,
  expiresAtMs: null,
  executionTimeoutMs: null,
  headers: {},
});
