import { describe, expect, it } from 'vitest';
import { idempotencyKeyOf } from './claimer.js';

describe('idempotencyKeyOf', () => {
  it('is the businessKey when set, else the job id, and never depends on the attempt', () => {
    expect(idempotencyKeyOf({ jobId: 'job-1', businessKey: 'invoice-42' })).toBe('invoice-42');
    expect(idempotencyKeyOf({ jobId: 'job-1', businessKey: null })).toBe('job-1');
    const first = { jobId: 'job-1', businessKey: null, attempt: 1 };
    const retry = { ...first, attempt: 2 };
    expect(idempotencyKeyOf(retry)).toBe(idempotencyKeyOf(first));
  });
});
