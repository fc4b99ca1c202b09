import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '@sched/logging';
import type { Lease } from '@sched/store';
import { ExecutionContext } from './execution-context.js';
import type { DispatchRecord } from './types.js';

const rec = {
  jobId: 'job-1',
  queue: 'q',
  version: 3,
  attempt: 1,
  idempotencyKey: 'biz-1',
  businessKey: 'biz-1',
} as unknown as DispatchRecord;

const lease: Lease = {
  jobId: 'job-1',
  attemptId: 'a-1',
  attempt: 1,
  version: 3,
  owner: 'w-1',
  generation: 7,
  leaseUntilMs: 0,
  checkpoint: { page: 2 },
  maxAttempts: null,
  retryPolicy: null,
};

/** A pool stand-in: lease renewals answer `renewed` (a row or none), state reads answer `state`. */
function fakePool(answers: { renewed: boolean; state: string }) {
  const queries: string[] = [];
  const pool = {
    query: (q: string | { name?: string; text: string }) => {
      const text = typeof q === 'string' ? q : q.text;
      queries.push(text);
      if (text.includes('lease_until = now()'))
        return Promise.resolve({ rows: answers.renewed ? [{ until_ms: 1 }] : [] });
      return Promise.resolve({ rows: [{ state: answers.state, version: 3 }] });
    },
  };
  return { pool: pool as unknown as pg.Pool, queries };
}

describe('ExecutionContext', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function make(answers = { renewed: true, state: 'RUNNING' }, timeoutMs = 1_000) {
    const { pool, queries } = fakePool(answers);
    const lost: string[] = [];
    const ctx = new ExecutionContext(
      { pool, log: silentLogger(), leaseTtlMs: 30_000, onLeaseLost: (q) => lost.push(q) },
      rec,
      lease,
      'a-1',
      200,
      timeoutMs,
    );
    return { ctx, queries, lost };
  }

  it('carries the job keys, the fencing token and the last checkpoint', () => {
    const { ctx } = make();
    expect(ctx.idempotencyKey).toBe('biz-1');
    expect(ctx.fencingToken).toEqual({ owner: 'w-1', generation: 7 });
    expect(ctx.lastCheckpoint).toEqual({ page: 2 });
    ctx.settle();
  });

  it('stops renewing the lease at the execution timeout: a handler ignoring its signal loses the job', async () => {
    const { ctx, queries } = make();
    vi.advanceTimersByTime(1_000);
    const renewals = () => queries.filter((q) => q.includes('lease_until = now()')).length;
    const before = renewals();
    expect(before).toBeGreaterThan(0); // heartbeats every 200 ms until then
    vi.advanceTimersByTime(5_000);
    expect(renewals()).toBe(before);
    await expect(ctx.heartbeat()).rejects.toMatchObject({ code: 'SCHED_E_TIMED_OUT' });
    await expect(ctx.checkpoint({ step: 9 })).rejects.toMatchObject({ code: 'SCHED_E_TIMED_OUT' });
    expect(renewals()).toBe(before);
    ctx.settle();
  });

  it('aborts its signal with TIMED_OUT at the execution timeout, whether read before or after', () => {
    const early = make();
    const signal = early.ctx.signal;
    vi.advanceTimersByTime(999);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('TIMED_OUT');
    expect(early.ctx.abortReason).toBe('TIMED_OUT');
    early.ctx.settle();

    const late = make();
    vi.advanceTimersByTime(1_000);
    expect(late.ctx.abortReason).toBe('TIMED_OUT');
    expect(late.ctx.signal.aborted).toBe(true);
    expect(late.ctx.signal.reason).toBe('TIMED_OUT');
    late.ctx.settle();
  });

  it('renews the lease every heartbeat interval until settled, and never times out after that', async () => {
    const { ctx, queries } = make();
    await vi.advanceTimersByTimeAsync(450);
    expect(queries.filter((q) => q.includes('lease_until = now()'))).toHaveLength(2);
    ctx.settle();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(queries.filter((q) => q.includes('lease_until = now()'))).toHaveLength(2);
    expect(ctx.abortReason).toBeNull();
  });

  it('a lost lease: heartbeat throws SCHED_E_LEASE_LOST, the signal says CANCELLED when the job was cancelled', async () => {
    const { ctx, lost } = make({ renewed: false, state: 'CANCELLED' });
    const signal = ctx.signal;
    await expect(ctx.heartbeat()).rejects.toMatchObject({ code: 'SCHED_E_LEASE_LOST' });
    expect(signal.reason).toBe('CANCELLED');
    expect(await ctx.isCancelled()).toBe(true);
    // Counted once, however many renewals find it lost.
    await expect(ctx.checkpoint({ page: 3 })).rejects.toMatchObject({ code: 'SCHED_E_LEASE_LOST' });
    expect(lost).toEqual(['q']);
    ctx.settle();
  });

  it('a lease reclaimed (not cancelled) aborts with LEASE_LOST; the first reason wins', async () => {
    const { ctx } = make({ renewed: false, state: 'SCHEDULED' });
    await expect(ctx.heartbeat()).rejects.toMatchObject({ code: 'SCHED_E_LEASE_LOST' });
    vi.advanceTimersByTime(1_000);
    expect(ctx.abortReason).toBe('LEASE_LOST');
    expect(ctx.signal.reason).toBe('LEASE_LOST');
    ctx.settle();
  });

  it('makes its child logger once, on first use', () => {
    const { ctx } = make();
    expect(ctx.log).toBe(ctx.log);
    ctx.settle();
  });
});
