import { describe, expect, it } from 'vitest';
import { NAMED_BATCH_MAX, batchStatement } from './pool.js';

describe('batchStatement', () => {
  it('names small batches (prepared, planned once) and leaves big ones unnamed (planned for their size)', () => {
    const small = batchStatement('job_claim_due_across', 'SELECT $1', [['a']], NAMED_BATCH_MAX);
    expect(small).toEqual({ name: 'job_claim_due_across', text: 'SELECT $1', values: [['a']] });
    const big = batchStatement('job_claim_due_across', 'SELECT $1', [['a']], NAMED_BATCH_MAX + 1);
    expect(big).toEqual({ text: 'SELECT $1', values: [['a']] });
    expect(big).not.toHaveProperty('name');
  });
});
