/**
 * Sticky partition assignment for a consumer group: when members join or leave, only the
 * partitions that must move for balance move. A scheduler pays for every partition it gains (an
 * epoch bump and a wheel reload from Postgres) and every one it loses; a round-robin assignment
 * over member ids, which are random, hands most partitions to a different member on every join.
 *
 * Each member says, when it joins, which partitions it holds and since when (`HeldPartition`).
 * Per topic, in order:
 * 1. A partition held by several members (one was cut off from the group and another took the
 *    partition meanwhile) stays with the one that got it last; a partition that no longer exists
 *    is dropped.
 * 2. Quotas: n partitions over m subscribed members, `floor(n/m)` each and one more for `n % m` of
 *    them: those given the least so far over the topics before (so that members of a group over
 *    several topics end up balanced in total, as far as their subscriptions allow), then those
 *    holding the most (so that an extra partition stays where it is), then by member id.
 * 3. A member over its quota gives up its highest-numbered partitions.
 * 4. The partitions nobody holds go, lowest first, to the members under their quota.
 *
 * Moves, for one topic: a member joining takes `floor(n/m)` or so partitions and nothing else
 * moves; a member leaving hands on only its own. Over several topics, the balance of the totals
 * can move a few more. Pure and deterministic: the same claims give the same result.
 */

/** A partition a member holds, and since when (ms since epoch, the member's clock). */
export interface HeldPartition {
  partition: number;
  sinceMs: number;
}

/** What a member says when it joins the group. */
export interface MemberClaim {
  memberId: string;
  /** The topics it subscribes to; it is given partitions of these only. */
  topics: readonly string[];
  /** The partitions it holds now, per topic. */
  held: ReadonlyMap<string, readonly HeldPartition[]>;
}

/** memberId → topic → partitions (ascending); every member appears, possibly with nothing. */
export type GroupAssignment = Map<string, Map<string, number[]>>;

export function stickyAssign(
  members: readonly MemberClaim[],
  partitionsByTopic: ReadonlyMap<string, readonly number[]>,
): GroupAssignment {
  const out: GroupAssignment = new Map();
  const givenSoFar = new Map<string, number>();
  const sorted = [...members].sort((a, b) => compareIds(a.memberId, b.memberId));
  for (const m of sorted) {
    out.set(m.memberId, new Map());
    givenSoFar.set(m.memberId, 0);
  }
  const topics = [...partitionsByTopic.keys()].sort(compareIds);
  for (const topic of topics) {
    const subs = sorted.filter((m) => m.topics.includes(topic));
    if (subs.length === 0) continue;
    const exists = new Set(partitionsByTopic.get(topic));

    // 1. Who holds what: on a conflict, the latest taker (ties: the lower member id).
    const holder = new Map<number, { memberId: string; sinceMs: number }>();
    for (const m of subs) {
      for (const h of m.held.get(topic) ?? []) {
        if (!exists.has(h.partition)) continue;
        const cur = holder.get(h.partition);
        if (!cur || h.sinceMs > cur.sinceMs)
          holder.set(h.partition, { memberId: m.memberId, sinceMs: h.sinceMs });
      }
    }
    const kept = new Map<string, number[]>(subs.map((m) => [m.memberId, []]));
    for (const [p, h] of holder) kept.get(h.memberId)!.push(p);
    for (const ps of kept.values()) ps.sort((a, b) => a - b);

    // 2. Quotas: the extra partitions go to those already holding the most.
    const n = exists.size;
    const base = Math.floor(n / subs.length);
    let extra = n % subs.length;
    const byClaim = [...subs].sort(
      (a, b) =>
        givenSoFar.get(a.memberId)! - givenSoFar.get(b.memberId)! ||
        kept.get(b.memberId)!.length - kept.get(a.memberId)!.length ||
        compareIds(a.memberId, b.memberId),
    );
    const quota = new Map<string, number>();
    for (const m of byClaim) quota.set(m.memberId, base + (extra-- > 0 ? 1 : 0));

    // 3. Over quota: give up the highest-numbered.
    const free: number[] = [...exists].filter((p) => !holder.has(p));
    for (const m of subs) {
      const ps = kept.get(m.memberId)!;
      const q = quota.get(m.memberId)!;
      if (ps.length > q) free.push(...ps.splice(q));
    }
    free.sort((a, b) => a - b);

    // 4. Fill those under quota, lowest partitions first.
    let next = 0;
    for (const m of subs) {
      const ps = kept.get(m.memberId)!;
      const q = quota.get(m.memberId)!;
      while (ps.length < q && next < free.length) ps.push(free[next++]!);
      ps.sort((a, b) => a - b);
      if (ps.length > 0) out.get(m.memberId)!.set(topic, ps);
      givenSoFar.set(m.memberId, givenSoFar.get(m.memberId)! + ps.length);
    }
  }
  return out;
}

/** The bytes a member sends with its join: the partitions it holds and since when. */
export function encodeHeld(held: ReadonlyMap<string, readonly HeldPartition[]>): Buffer {
  const topics: Record<string, [number, number][]> = {};
  for (const [topic, ps] of held) topics[topic] = ps.map((h) => [h.partition, h.sinceMs]);
  return Buffer.from(JSON.stringify({ v: 1, held: topics }), 'utf8');
}

/**
 * Reads what `encodeHeld` wrote. Anything else (no bytes, another assigner's or a future version's
 * data) reads as holding nothing: that member is treated as new, which moves partitions but never
 * breaks the assignment.
 */
export function decodeHeld(bytes: Buffer | null | undefined): Map<string, HeldPartition[]> {
  const held = new Map<string, HeldPartition[]>();
  if (!bytes || bytes.length === 0) return held;
  try {
    const doc = JSON.parse(bytes.toString('utf8')) as { v?: unknown; held?: unknown };
    if (doc.v !== 1 || typeof doc.held !== 'object' || doc.held === null) return held;
    for (const [topic, ps] of Object.entries(doc.held as Record<string, unknown>)) {
      if (!Array.isArray(ps)) continue;
      const list: HeldPartition[] = [];
      for (const e of ps as unknown[]) {
        if (!Array.isArray(e) || !Number.isInteger(e[0]) || typeof e[1] !== 'number') continue;
        list.push({ partition: e[0] as number, sinceMs: e[1] as number });
      }
      held.set(topic, list);
    }
  } catch {
    return new Map();
  }
  return held;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
