import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeHeld,
  encodeHeld,
  stickyAssign,
  type HeldPartition,
  type MemberClaim,
} from './sticky-assignment.js';

const T = 'sched.commands';
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

function member(memberId: string, held: number[] = [], sinceMs = 1_000, topics = [T]): MemberClaim {
  return { memberId, topics, held: new Map([[T, held.map((partition) => ({ partition, sinceMs }))]]) };
}

function of(a: Map<string, Map<string, number[]>>, memberId: string, topic = T): number[] {
  return a.get(memberId)?.get(topic) ?? [];
}

describe('stickyAssign', () => {
  it('splits a new group evenly, every partition once', () => {
    const a = stickyAssign([member('c'), member('a'), member('b')], new Map([[T, range(12)]]));
    expect([of(a, 'a'), of(a, 'b'), of(a, 'c')].map((ps) => ps.length)).toEqual([4, 4, 4]);
    expect([...of(a, 'a'), ...of(a, 'b'), ...of(a, 'c')].sort((x, y) => x - y)).toEqual(range(12));
  });

  it('a member joining takes its share and nothing else moves', () => {
    const a = stickyAssign(
      [member('a', [0, 2, 4, 6, 8, 10]), member('b', [1, 3, 5, 7, 9, 11]), member('c')],
      new Map([[T, range(12)]]),
    );
    expect(of(a, 'a')).toEqual([0, 2, 4, 6]);
    expect(of(a, 'b')).toEqual([1, 3, 5, 7]);
    expect(of(a, 'c')).toEqual([8, 9, 10, 11]);
  });

  it('a member leaving hands on only its own partitions', () => {
    const a = stickyAssign(
      [member('a', [0, 3, 6, 9]), member('b', [1, 4, 7, 10])],
      new Map([[T, range(12)]]),
    );
    expect(of(a, 'a')).toEqual([0, 2, 3, 5, 6, 9]);
    expect(of(a, 'b')).toEqual([1, 4, 7, 8, 10, 11]);
  });

  it('the extra partition of an uneven split stays with a member that holds it', () => {
    // 7 partitions over 2: the one holding 4 keeps its 4, rather than giving one up and taking one.
    const a = stickyAssign([member('a', [0, 1, 2]), member('b', [3, 4, 5, 6])], new Map([[T, range(7)]]));
    expect(of(a, 'a')).toEqual([0, 1, 2]);
    expect(of(a, 'b')).toEqual([3, 4, 5, 6]);
  });

  it('a partition two members claim stays with the one that took it last', () => {
    // `a` was cut off from the group (SIGSTOP past its session) while `b` took its partitions.
    const a = stickyAssign(
      [member('a', [0, 1, 2, 3], 1_000), member('b', [0, 1, 2, 3], 9_000)],
      new Map([[T, range(4)]]),
    );
    expect(of(a, 'b')).toEqual([0, 1]);
    expect(of(a, 'a')).toEqual([2, 3]); // given up by b for balance, not kept by a's stale claim
  });

  it('drops partitions that no longer exist and hands out new ones', () => {
    const a = stickyAssign([member('a', [0, 1, 7]), member('b', [2, 3])], new Map([[T, range(6)]]));
    expect(of(a, 'a')).toEqual([0, 1, 4]);
    expect(of(a, 'b')).toEqual([2, 3, 5]);
  });

  it("gives a topic's partitions only to members subscribed to it", () => {
    const U = 'sched.other';
    const a = stickyAssign(
      [
        { memberId: 'a', topics: [T, U], held: new Map() },
        { memberId: 'b', topics: [T], held: new Map() },
      ],
      new Map([
        [T, range(3)],
        [U, range(2)],
      ]),
    );
    expect(of(a, 'b', U)).toEqual([]);
    expect(of(a, 'a', U)).toEqual([0, 1]);
    expect(of(a, 'a').length + of(a, 'b').length).toBe(3);
    expect(a.get('b')).toBeDefined(); // every member gets an entry, even an empty one
  });

  it('balances the totals of a group over several topics', () => {
    // Three queues of 4 partitions; a held all 12, b and c join: 4 each in total, not 6/3/3.
    const topics = ['q1', 'q2', 'q3'];
    const a = stickyAssign(
      [
        {
          memberId: 'a',
          topics,
          held: new Map(topics.map((t) => [t, range(4).map((partition) => ({ partition, sinceMs: 1 }))])),
        },
        { memberId: 'b', topics, held: new Map() },
        { memberId: 'c', topics, held: new Map() },
      ],
      new Map(topics.map((t) => [t, range(4)])),
    );
    const total = (m: string) => topics.reduce((n, t) => n + of(a, m, t).length, 0);
    expect([total('a'), total('b'), total('c')]).toEqual([4, 4, 4]);
    for (const t of topics)
      expect([...of(a, 'a', t), ...of(a, 'b', t), ...of(a, 'c', t)].sort()).toEqual(range(4));
  });

  it('property: every partition once, balanced, and no member loses a partition it could keep', () => {
    const claim = fc.record({
      held: fc.uniqueArray(fc.nat(23), { maxLength: 24 }),
      sinceMs: fc.integer({ min: 0, max: 5 }),
      subscribed: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(claim, { minLength: 1, maxLength: 7 }),
        fc.integer({ min: 1, max: 24 }),
        (claims, n) => {
          const members = claims.map((c, i) =>
            member(`m${i}`, c.held, c.sinceMs, c.subscribed || i === 0 ? [T] : []),
          );
          const a = stickyAssign(members, new Map([[T, range(n)]]));
          const subs = members.filter((m) => m.topics.includes(T));
          const all = subs.flatMap((m) => of(a, m.memberId)).sort((x, y) => x - y);
          expect(all).toEqual(range(n));
          const counts = subs.map((m) => of(a, m.memberId).length);
          expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
          for (const m of members.filter((x) => !x.topics.includes(T))) expect(of(a, m.memberId)).toEqual([]);
          // What each member won (held, still exists, nobody took it later): it keeps all of it, or
          // its whole assignment comes from it.
          for (const m of subs) {
            const won = (m.held.get(T) ?? []).filter(
              (h) => h.partition < n && !subs.some((o) => o !== m && laterTaker(o, m, h)),
            );
            const got = new Set(of(a, m.memberId));
            const keptWon = won.filter((h) => got.has(h.partition)).length;
            expect(keptWon).toBe(Math.min(won.length, got.size));
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('stickyAssign over several topics', () => {
  it('property: every partition of every topic once, to a subscriber, balanced per topic, same input same output', () => {
    const topics = ['q1', 'q2', 'q3'];
    const claim = fc.record({
      topics: fc.subarray(topics, { minLength: 1 }),
      held: fc.array(fc.tuple(fc.constantFrom(...topics), fc.nat(9), fc.nat(3)), { maxLength: 12 }),
    });
    fc.assert(
      fc.property(
        fc.array(claim, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(10), { minLength: 3, maxLength: 3 }),
        (cs, sizes) => {
          const members: MemberClaim[] = cs.map((c, i) => {
            const held = new Map<string, HeldPartition[]>();
            for (const [t, partition, sinceMs] of c.held) {
              const list = held.get(t) ?? [];
              if (!list.some((h) => h.partition === partition)) list.push({ partition, sinceMs });
              held.set(t, list);
            }
            return { memberId: `m${i}`, topics: c.topics, held };
          });
          const parts = new Map(topics.map((t, i) => [t, range(sizes[i]!)]));
          const a = stickyAssign(members, parts);
          expect(stickyAssign([...members].reverse(), parts)).toEqual(a);
          for (const t of topics) {
            const subs = members.filter((m) => m.topics.includes(t));
            const got = members.flatMap((m) => of(a, m.memberId, t));
            if (subs.length === 0) {
              expect(got).toEqual([]);
              continue;
            }
            expect([...got].sort((x, y) => x - y)).toEqual(parts.get(t));
            for (const m of members.filter((x) => !x.topics.includes(t)))
              expect(of(a, m.memberId, t)).toEqual([]);
            const counts = subs.map((m) => of(a, m.memberId, t).length);
            expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
          }
        },
      ),
      { numRuns: 1_000 },
    );
  });
});

/** Whether `o` wins partition `h` over `m` (later, or as late with the lower member id). */
function laterTaker(o: MemberClaim, m: MemberClaim, h: HeldPartition): boolean {
  const theirs = (o.held.get(T) ?? []).find((x) => x.partition === h.partition);
  if (!theirs) return false;
  return theirs.sinceMs > h.sinceMs || (theirs.sinceMs === h.sinceMs && o.memberId < m.memberId);
}

describe('encodeHeld / decodeHeld', () => {
  it('round-trips what a member holds', () => {
    const held = new Map([[T, [{ partition: 3, sinceMs: 1_764_000_000_000 }]]]);
    expect(decodeHeld(encodeHeld(held))).toEqual(held);
  });
  it('reads anything else as holding nothing', () => {
    for (const bytes of [
      undefined,
      null,
      Buffer.alloc(0),
      Buffer.from('{'),
      Buffer.from('{"v":2,"held":{}}'),
    ])
      expect(decodeHeld(bytes).size).toBe(0);
    expect(decodeHeld(Buffer.from('{"v":1,"held":{"t":[[1,5],["x",1],[2]]}}'))).toEqual(
      new Map([['t', [{ partition: 1, sinceMs: 5 }]]]),
    );
  });
});
