import { describe, expect, it } from 'vitest';
import type { Logger } from '@sched/logging';
import { AssignmentTracker } from './assignment-tracker.js';

const T = 'cmds';
const quiet = { warn() {}, error() {}, info() {}, debug() {} } as unknown as Logger;

/** Handlers that record their calls and hold what they were given, unless told to let it go. */
function world(opts: { slowAssign?: boolean; failAssign?: number[] } = {}) {
  const calls: string[] = [];
  const held = new Set<number>();
  let release: (() => void) | undefined;
  let now = 1_000;
  const tracker = new AssignmentTracker(
    {
      async onAssigned(_t, ps) {
        calls.push(`+${ps.join(',')}`);
        if (opts.slowAssign) await new Promise<void>((r) => (release = r));
        for (const p of ps) if (!opts.failAssign?.includes(p)) held.add(p);
        if (ps.some((p) => opts.failAssign?.includes(p))) throw new Error('setup failed');
      },
      async onRevoked(_t, ps) {
        calls.push(`-${ps.join(',')}`);
        for (const p of ps) held.delete(p);
      },
      holds: (_t, p) => held.has(p),
    },
    quiet,
    { retakeAfterMs: 5_000, now: () => now },
  );
  return {
    tracker,
    calls,
    held,
    finishAssign: () => release?.(),
    tick: (ms: number) => (now += ms),
    claimed: () => (tracker.claims().get(T) ?? []).map((h) => h.partition),
  };
}

const assignment = (...ps: number[]) => new Map([[T, ps]]);

describe('AssignmentTracker', () => {
  it('tells the handlers only what changed between assignments', async () => {
    const w = world();
    w.tracker.joined('m1', assignment(0, 1, 2));
    await w.tracker.settled();
    w.tracker.joined('m1', assignment(1, 2, 3));
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1,2', '-0', '+3']);
    expect(w.tracker.assignment()).toEqual(assignment(1, 2, 3));
  });

  it('applies only the latest of assignments queued behind a slow one', async () => {
    const w = world({ slowAssign: true });
    w.tracker.joined('m1', assignment(0, 1));
    await Promise.resolve();
    w.tracker.joined('m1', assignment(2, 3)); // superseded before it runs
    w.tracker.joined('m1', assignment(1, 4));
    // While 0 and 1 are set up, the member claims what it was given last, 1 and 4.
    expect(w.claimed()).toEqual([1, 4]);
    w.finishAssign();
    await new Promise((r) => setTimeout(r, 0));
    w.finishAssign();
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1', '-0', '+4']);
  });

  it('revokes everything and assigns afresh when it comes back under a new member id', async () => {
    const w = world();
    w.tracker.joined('m1', assignment(0, 1));
    await w.tracker.settled();
    w.tracker.joined('m2', assignment(0, 1));
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1', '-0,1', '+0,1']);
  });

  it('after a crash, revokes everything, then assigns the next assignment afresh', async () => {
    const w = world();
    w.tracker.joined('m1', assignment(0, 1));
    await w.tracker.settled();
    w.tracker.lost();
    w.tracker.joined('m1', assignment(0, 1));
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1', '-0,1', '+0,1']);
  });

  it('a partition the handlers let go of is not claimed, and is assigned afresh when it comes back', async () => {
    const w = world();
    w.tracker.joined('m1', assignment(0, 1));
    await w.tracker.settled();
    w.held.delete(1); // fenced
    expect(w.claimed()).toEqual([0]);
    w.tracker.joined('m1', assignment(0, 1));
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1', '+1']);
  });

  it('retakes a partition still assigned but not held after retakeAfterMs and two heartbeats, not before, not while rebalancing', async () => {
    const w = world();
    w.tracker.joined('m1', assignment(0, 1));
    await w.tracker.settled();
    w.held.delete(0);
    w.tracker.retake(); // first seen let go of
    w.tracker.heartbeat();
    w.tick(4_000);
    w.tracker.retake();
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1']);
    w.tick(2_000);
    w.tracker.retake(); // the time has passed, but only one heartbeat since the let-go
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1']);
    w.tracker.heartbeat();
    w.tracker.rebalancing = true;
    w.tracker.retake();
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1']);
    w.tracker.rebalancing = false;
    w.tracker.retake();
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1', '+0']);
    expect(w.held.has(0)).toBe(true);
  });

  it('a setup that failed leaves the assignment owned, the partition not held and retaken later', async () => {
    const w = world({ failAssign: [1] });
    w.tracker.joined('m1', assignment(0, 1));
    await w.tracker.settled();
    expect(w.tracker.assignment()).toEqual(assignment(0, 1));
    expect(w.claimed()).toEqual([0]);
    w.tracker.retake();
    w.tick(5_000);
    w.tracker.heartbeat();
    w.tracker.heartbeat();
    w.tracker.retake();
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0,1', '+1']);
  });

  it('does not retake while an assignment is being applied', async () => {
    const w = world({ slowAssign: true });
    w.tracker.joined('m1', assignment(0));
    await Promise.resolve();
    w.tracker.retake();
    w.tick(10_000);
    w.tracker.heartbeat();
    w.tracker.heartbeat();
    w.tracker.retake(); // 0 is being set up: not let go of, and a transition is pending
    w.finishAssign();
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0']);
  });

  it('a member cut off from the coordinator (no heartbeat accepted) never retakes', async () => {
    const w = world();
    w.tracker.joined('m1', assignment(0));
    await w.tracker.settled();
    w.held.delete(0);
    for (let i = 0; i < 10; i++) {
      w.tracker.retake();
      w.tick(60_000);
    }
    await w.tracker.settled();
    expect(w.calls).toEqual(['+0']);
  });

  it('an accepted heartbeat ends a rebalance the client reported', () => {
    const w = world();
    w.tracker.rebalancing = true;
    w.tracker.heartbeat();
    expect(w.tracker.rebalancing).toBe(false);
  });

  it('says since when it holds each partition: kept partitions keep their time, a new member id starts over', async () => {
    const w = world();
    w.tracker.joined('m1', assignment(0));
    w.tick(100);
    w.tracker.joined('m1', assignment(0, 1));
    await w.tracker.settled();
    expect(w.tracker.claims().get(T)).toEqual([
      { partition: 0, sinceMs: 1_000 },
      { partition: 1, sinceMs: 1_100 },
    ]);
    w.tick(100);
    w.tracker.joined('m2', assignment(0, 1));
    await w.tracker.settled();
    expect(w.tracker.claims().get(T)).toEqual([
      { partition: 0, sinceMs: 1_200 },
      { partition: 1, sinceMs: 1_200 },
    ]);
  });
});
