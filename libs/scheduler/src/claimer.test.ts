import { describe, expect, it, vi } from 'vitest';
import type pg from 'pg';
import type * as Store from '@sched/store';
import { Claimer } from './claimer.js';
import type { SchedulerCodec } from '@sched/command-rules';
import { PartitionRuntime } from './partition-runtime.js';
import { createSchedulerMetrics } from './scheduler-metrics.js';
import { wheelIndexFactory } from './wheel-index.js';

/** The claim statement, scripted: partition 0 is current, nothing is claimed, database time 1000. */
vi.mock('@sched/store', async (actual) => ({
  ...(await actual<typeof Store>()),
  jobClaimDueDispatch: vi.fn(async () =>
    Promise.resolve({ nowMs: 1_000, current: new Set([0]), claimed: [] }),
  ),
}));

const pool = { connect: async () => Promise.resolve({ release: () => undefined }) } as unknown as pg.Pool;
const codec = { dispatchHeader: () => Buffer.alloc(0) } as unknown as SchedulerCodec;

async function misses(settling: boolean): Promise<Record<string, number>> {
  const metrics = createSchedulerMetrics('test');
  const rt = new PartitionRuntime(0, 1, -1, wheelIndexFactory()());
  rt.settling = settling;
  const claimer = new Claimer(pool, codec, metrics, 30_000);
  const entries = [
    { jobId: 'due', dueMs: 900, tag: 0 },
    { jobId: 'later', dueMs: 2_000, tag: 0 },
  ];
  const round = claimer.claimRound([{ rt, entries }]);
  rt.settling = !settling; // what counts is the partition's state as the round started
  const out = await round;
  expect(out.outcomes.get(0)?.notYetDue.map((e) => e.jobId)).toEqual(['later']);
  const { values } = await metrics.claimMisses.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.reason), v.value]));
}

describe('Claimer misses', () => {
  it('counts a due entry it did not claim as gone, and as handoff while its partition settles', async () => {
    expect(await misses(false)).toEqual({ not_yet_due: 1, gone: 1 });
    expect(await misses(true)).toEqual({ not_yet_due: 1, handoff: 1 });
  });
});
