import { describe, expect, it } from 'vitest';
import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { NotHomeRegionError, type PartitionOwnership as ClaimedOwnership } from '@sched/store';
import { schedulerConfig } from './config.js';
import { FireTags } from './fair-ready.js';
import { PartitionOwnership, type WindowEntry } from './partition-ownership.js';
import { createSchedulerMetrics } from './scheduler-metrics.js';
import { wheelIndexFactory } from './wheel-index.js';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;

/**
 * An ownership whose store calls are scripted: `rows()` is the table at the time of a read (a read
 * returns the rows due in its range), every call is written to `calls` in order and every read's
 * range to `ranges`.
 */
function scripted(
  rows: () => WindowEntry[],
  opts: {
    refuse?: boolean;
    secondRead?: Promise<void>;
    epochInStore?: () => number;
    /** The command topic's end offsets (default: every partition empty). */
    endOffsets?: () => Promise<Map<number, number>>;
    takeoverMaxHoldMs?: number;
  } = {},
) {
  const metrics = createSchedulerMetrics('test');
  const calls: string[] = [];
  const ranges: [number, number][] = [];
  const demoted: NotHomeRegionError[] = [];
  let epoch = 0;
  let onClaim: (() => void) | undefined;
  const owner: PartitionOwnership = new PartitionOwnership({
    config: schedulerConfig({
      ownerId: 'o1',
      commandsTopic: 't',
      ...(opts.takeoverMaxHoldMs === undefined ? {} : { takeoverMaxHoldMs: opts.takeoverMaxHoldMs }),
    }),
    pool: {} as pg.Pool,
    metrics,
    log: quiet,
    newIndex: wheelIndexFactory(),
    fireTags: new FireTags(),
    arm: () => calls.push(`arm:${owner.get(0)?.index.size ?? 'none'}`),
    demote: (err) => demoted.push(err),
    released: () => undefined,
    stopping: () => false,
    claim: async (partition) => {
      calls.push('claim');
      if (opts.refuse) throw new NotHomeRegionError('eu', 'us');
      onClaim?.();
      return { partition, ownerId: 'o1', epoch: ++epoch, appliedOffset: -1 } as ClaimedOwnership;
    },
    currentEpoch: async () => Promise.resolve(opts.epochInStore?.() ?? epoch),
    endOffsets:
      opts.endOffsets ?? (async () => Promise.resolve(new Map([0, 1, 2, 3].map((p) => [p, 0] as const)))),
    loadWindow: async function* (_p, fromMs, untilMs) {
      calls.push('load');
      ranges.push([fromMs, untilMs]);
      if (calls.filter((c) => c === 'load').length === 2) await opts.secondRead;
      await Promise.resolve();
      yield rows().filter((e) => e.dueMs >= fromMs && e.dueMs < untilMs);
    },
  });
  /** The owner gauges this process reports: partition → epoch. */
  const epochGauge = async () => {
    const { values } = await metrics.partitionEpoch.get();
    return Object.fromEntries(values.map((v) => [v.labels.partition, v.value]));
  };
  return { owner, calls, ranges, demoted, epochGauge, setOnClaim: (f: () => void) => (onClaim = f) };
}

/** A second window read that waits until the test lets it go. */
function heldRead(): { secondRead: Promise<void>; letRead: () => void } {
  let letRead = (): void => undefined;
  const secondRead = new Promise<void>((r) => (letRead = r));
  return { secondRead, letRead };
}

describe('PartitionOwnership setup', () => {
  it('reads the first window before the epoch bump and fires from it right after the bump', async () => {
    const now = Date.now();
    let table: WindowEntry[] = [
      { id: 'a', dueMs: now + 1_000, tag: 0 },
      { id: 'b', dueMs: now + 2_000, tag: 0 },
    ];
    const s = scripted(() => table);
    // Between the first read and the bump the old owner applies a create, fires `a` and moves `b`.
    s.setOnClaim(() => {
      table = [
        { id: 'b', dueMs: now + 20_000, tag: 0 },
        { id: 'c', dueMs: now + 3_000, tag: 0 },
      ];
    });
    await s.owner.onAssigned([0]);
    // load (first window) → claim → armed with the two entries read before it → load again → …
    expect(s.calls.slice(0, 4)).toEqual(['load', 'claim', 'arm:2', 'load']);
    // Both reads cover the same first window; the rest of the horizon is read from its end on.
    const [first, second, rest] = s.ranges;
    expect(second).toEqual(first);
    expect(rest![0]).toBe(first![1]);
    const rt = s.owner.get(0)!;
    // `c` came in with the second read; `a`, fired by the old owner, is dropped (it would be a
    // claim miss when due).
    expect(['a', 'b', 'c'].map((id) => rt.index.has(id))).toEqual([false, true, true]);
    expect(s.owner.owned()).toEqual([{ partition: 0, epoch: 1, wheelSize: 2 }]);
    // `b` waits for its new time: by now + 5 s only `c` is due.
    expect(rt.index.advance(now + 5_000, 10).map((e) => e.jobId)).toEqual(['c']);
  });

  it('drops what the second read no longer has, in the index or the ready set, unless this owner moved it since', async () => {
    const now = Date.now();
    const { secondRead, letRead } = heldRead();
    let table: WindowEntry[] = [
      { id: 'a', dueMs: now - 10, tag: 0 },
      { id: 'b', dueMs: now + 1_000, tag: 0 },
      { id: 'c', dueMs: now + 2_000, tag: 0 },
      { id: 'd', dueMs: now + 3_000, tag: 0 },
    ];
    const s = scripted(() => table, { secondRead });
    const assigned = s.owner.onAssigned([0]);
    await new Promise((r) => setImmediate(r));
    const rt = s.owner.get(0)!;
    // A round took `a` into the ready set; this owner applied a reschedule of `c` to a time past the
    // window (the database no longer has it in the window either).
    for (const e of rt.index.advance(now, 10)) rt.ready.push(e);
    rt.place('c', now + 60_000);
    // Meanwhile the old owner fired `a` and `b` before it learned of the bump; `d` is untouched.
    table = [
      { id: 'c', dueMs: now + 60_000, tag: 0 },
      { id: 'd', dueMs: now + 3_000, tag: 0 },
    ];
    letRead();
    await assigned;
    expect(rt.ready.get('a')).toBeUndefined();
    expect(['a', 'b', 'c', 'd'].map((id) => rt.index.has(id))).toEqual([false, false, true, true]);
    expect(rt.index.dueMsOf('c')).toBe(now + 60_000);
    expect(s.owner.owned()).toEqual([{ partition: 0, epoch: 1, wheelSize: 2 }]);
  });

  it('leaves an entry a firing round already took out where it is, unless it moved meanwhile', async () => {
    const now = Date.now();
    const { secondRead, letRead } = heldRead();
    let table: WindowEntry[] = [
      { id: 'a', dueMs: now - 10, tag: 0 },
      { id: 'b', dueMs: now - 5, tag: 0 },
    ];
    const s = scripted(() => table, { secondRead });
    const assigned = s.owner.onAssigned([0]);
    await new Promise((r) => setImmediate(r));
    // The round that the arm after the bump starts takes both into the ready set before the
    // second read; meanwhile `b` was rescheduled (by a batch the old owner applied).
    const rt = s.owner.get(0)!;
    expect(s.calls).toEqual(['load', 'claim', 'arm:2', 'load']);
    for (const e of rt.index.advance(now, 10)) rt.ready.push(e);
    table = [
      { id: 'a', dueMs: now - 10, tag: 0 },
      { id: 'b', dueMs: now + 10_000, tag: 0 },
    ];
    letRead();
    await assigned;
    expect([rt.ready.get('a') !== undefined, rt.index.has('a')]).toEqual([true, false]);
    expect([rt.ready.get('b') !== undefined, rt.index.has('b')]).toEqual([false, true]);
    expect(rt.index.advance(now + 9_000, 10)).toEqual([]);
  });

  it('does not add again an entry that a firing round of this owner is claiming when the second read sees it', async () => {
    const now = Date.now();
    const { secondRead, letRead } = heldRead();
    const table: WindowEntry[] = [
      { id: 'a', dueMs: now - 10, tag: 0 },
      { id: 'b', dueMs: now + 1_000, tag: 0 },
    ];
    const s = scripted(() => table, { secondRead });
    const assigned = s.owner.onAssigned([0]);
    await new Promise((r) => setImmediate(r));
    const rt = s.owner.get(0)!;
    // The round started at the bump took `a` out and its claim has not committed: the second read
    // still sees `a` SCHEDULED at the same time.
    expect(rt.index.advance(now, 10).map((e) => e.jobId)).toEqual(['a']);
    // Until the second read is done its rounds' misses are the handoff's (`handoff`, not `gone`).
    expect(rt.settling).toBe(true);
    letRead();
    await assigned;
    expect(rt.settling).toBe(false);
    expect([rt.index.has('a'), rt.ready.get('a')]).toEqual([false, undefined]);
    expect(rt.index.has('b')).toBe(true);
  });

  it('lets go and demotes when the claim is refused because another region is home', async () => {
    const s = scripted(() => [], { refuse: true });
    await s.owner.onAssigned([0, 1]);
    expect(s.owner.owned()).toEqual([]);
    expect(s.demoted).toHaveLength(1);
    expect(s.demoted[0]!.home).toBe('us');
  });

  it('a revoked partition leaves the gauges to its new owner, and gets them back if kept', async () => {
    let inStore = 1;
    const s = scripted(() => [], { epochInStore: () => inStore });
    s.owner.lingerMs = 60_000;
    await s.owner.onAssigned([0, 1]);
    expect(await s.epochGauge()).toEqual({ '0': 1, '1': 2 });
    s.owner.onRevoked([0, 1]);
    // Lingering (still firing until fenced), not owned, not reported.
    expect(s.owner.owned()).toEqual([]);
    expect(s.owner.all()).toHaveLength(2);
    expect(await s.epochGauge()).toEqual({});
    // Given back: partition 0's epoch is still current in the store (kept as it was, no claim);
    // partition 1 was claimed by someone else meanwhile (set up afresh, new epoch).
    const claims = () => s.calls.filter((c) => c === 'claim').length;
    const before = claims();
    inStore = 1;
    await s.owner.onAssigned([0]);
    expect(claims()).toBe(before);
    expect(await s.epochGauge()).toEqual({ '0': 1 });
    inStore = 99;
    await s.owner.onAssigned([1]);
    expect(claims()).toBe(before + 1);
    expect(await s.epochGauge()).toEqual({ '0': 1, '1': 3 });
  });
});

describe('PartitionOwnership takeover hold', () => {
  const now = Date.now();
  const due = (): WindowEntry[] => [{ id: 'a', dueMs: now - 10, tag: 0 }];
  const holdCount = async (s: ReturnType<typeof scripted>, outcome: string) => {
    const { values } = await (
      s.owner as unknown as { d: { metrics: ReturnType<typeof createSchedulerMetrics> } }
    ).d.metrics.takeoverHold.get();
    return values.find((v) => v.metricName?.endsWith('_count') && v.labels.outcome === outcome)?.value ?? 0;
  };

  it('holds firing until the commands on Kafka at takeover are applied', async () => {
    // Ten commands on the partition (offsets 0-9), none applied: held, with a due job waiting.
    const s = scripted(due, { endOffsets: async () => Promise.resolve(new Map([[0, 10]])) });
    await s.owner.onAssigned([0]);
    const rt = s.owner.get(0)!;
    expect([rt.held, rt.catchUpTo, rt.holdBacklog]).toEqual([true, 9, 10]);
    expect(await holdCount(s, 'caught_up')).toBe(0);
    // A batch up to offset 8: still held.
    rt.appliedOffset = 8;
    s.owner.applied(rt, '10');
    expect(rt.held).toBe(true);
    // Offset 9 applied: released, reported once, and the driver re-armed.
    const arms = s.calls.length;
    rt.appliedOffset = 9;
    s.owner.applied(rt, '12');
    expect(rt.held).toBe(false);
    expect(s.calls.length).toBe(arms + 1);
    expect(await holdCount(s, 'caught_up')).toBe(1);
    s.owner.applied(rt, '12');
    expect(await holdCount(s, 'caught_up')).toBe(1);
  });

  it('reports a takeover with nothing to apply as a hold of 0 and fires at once', async () => {
    const s = scripted(due);
    await s.owner.onAssigned([0]);
    expect(s.owner.get(0)!.held).toBe(false);
    expect(await holdCount(s, 'caught_up')).toBe(1);
  });

  it('takes the end from the first batch when the end offsets cannot be read', async () => {
    const s = scripted(due, { endOffsets: async () => Promise.reject(new Error('broker away')) });
    await s.owner.onAssigned([0]);
    const rt = s.owner.get(0)!;
    expect(rt.held).toBe(true);
    rt.appliedOffset = 3;
    s.owner.applied(rt, '7'); // the fetch saw offsets up to 6
    expect([rt.held, rt.catchUpTo]).toEqual([true, 6]);
    rt.appliedOffset = 6;
    s.owner.applied(rt, '9');
    expect(rt.held).toBe(false);
  });

  it('a partition given back while it lingered is held for what was produced meanwhile', async () => {
    let end = 0;
    const s = scripted(due, { endOffsets: async () => Promise.resolve(new Map([[0, end]])) });
    s.owner.lingerMs = 60_000;
    await s.owner.onAssigned([0]);
    const rt = s.owner.get(0)!;
    s.owner.onRevoked([0]);
    end = 5;
    await s.owner.onAssigned([0]);
    expect(s.owner.get(0)).toBe(rt);
    expect([rt.held, rt.catchUpTo]).toEqual([true, 4]);
  });

  it('fires with the backlog unapplied once the bound passes, and says so', async () => {
    const s = scripted(due, {
      endOffsets: async () => Promise.resolve(new Map([[0, 100]])),
      takeoverMaxHoldMs: 40,
    });
    await s.owner.onAssigned([0]);
    const rt = s.owner.get(0)!;
    expect(rt.held).toBe(true);
    await new Promise((r) => setTimeout(r, 80));
    expect(rt.held).toBe(false);
    expect(await holdCount(s, 'limit')).toBe(1);
    const limit = await (
      s.owner as unknown as { d: { metrics: ReturnType<typeof createSchedulerMetrics> } }
    ).d.metrics.takeoverHoldLimit.get();
    expect(limit.values[0]!.value).toBe(1);
  });
});
