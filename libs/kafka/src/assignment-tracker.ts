import type { Logger } from '@sched/logging';
import type { GroupConsumerHandlers } from './port.js';
import type { HeldPartition } from './sticky-assignment.js';

export interface AssignmentTrackerOptions {
  /**
   * How long a partition the group assigns to this member may stay not held by the handlers
   * before it is passed to `onAssigned` again (see `retake`): the group session, within which a
   * member that lost it to a newer generation hears of it.
   */
  retakeAfterMs: number;
  /** Called for each partition this member stops owning (forget its uncommitted offset). */
  onDropped?(topic: string, partition: number): void;
  now?: () => number;
}

/**
 * What a group member owns, and the calls that tell its handlers: independent of the Kafka client.
 * The client reports each completed join (`joined`, with the member id and assignment) and each
 * loss of everything (`lost`: a crash, a stop); transitions run one at a time, in order, and every
 * batch waits for them (`settled`), so `onAssigned` for a partition completes before its first
 * batch is handled.
 *
 * - Only the latest assignment is applied: a transition that finds a newer one queued applies
 *   that, and the superseded generations in between cost nothing.
 * - A partition kept across a rebalance is neither revoked nor assigned again. Kept means held all
 *   along: when this member comes back under a new member id (it was cut off from the group and
 *   others may have had its partitions meanwhile), or after a crash, everything is revoked and
 *   assigned afresh.
 * - One the handlers let go of (`holds` false: a setup that failed, a scheduler partition refused
 *   by the epoch fence) is not claimed at the next join, is assigned afresh if the group gives it
 *   back, and is passed to `onAssigned` again when it is still assigned to this member
 *   `retakeAfterMs` and two accepted heartbeats later (`retake`).
 * - `claims` is what this member says it holds when it joins (the sticky assignor's input): the
 *   latest assignment, including partitions still being set up, less those let go of.
 */
export class AssignmentTracker {
  /** The latest assignment the group gave this member. */
  private target = new Map<string, number[]>();
  /** The assignment the handlers were last told about. */
  private owned = new Map<string, number[]>();
  /** When this member got each partition (`topic/partition` → ms). */
  private readonly since = new Map<string, number>();
  /** Partitions passed to `onAssigned` whose call has not returned yet. */
  private readonly settingUp = new Set<string>();
  /** Owned partitions the handlers do not hold: since when, and the heartbeats counted then. */
  private readonly unheldSince = new Map<string, { atMs: number; beats: number }>();
  /** Heartbeats the coordinator accepted (`heartbeat`). */
  private beats = 0;
  /** Revoke everything at the next transition: this member's continuity is broken. */
  private fresh = false;
  private memberId: string | undefined;
  private pending = 0;
  private transition: Promise<void> = Promise.resolve();
  /** Set by the client while a rebalance is under way (cleared by `joined` and `heartbeat`). */
  rebalancing = false;
  private readonly now: () => number;

  constructor(
    private readonly handlers: Pick<GroupConsumerHandlers, 'onAssigned' | 'onRevoked' | 'holds'>,
    private readonly log: Logger,
    private readonly opts: AssignmentTrackerOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** A join completed: this member's id and assignment (partitions per topic). */
  joined(memberId: string, assignment: Map<string, number[]>): void {
    this.rebalancing = false;
    if (this.memberId !== undefined && memberId !== this.memberId) {
      this.log.warn(
        { before: this.memberId, now: memberId },
        'rejoined the group as a new member: every partition is revoked and assigned afresh',
      );
      this.fresh = true;
    }
    // Continuity broken: what it is given now, it got now.
    if (this.fresh) this.since.clear();
    this.memberId = memberId;
    const at = this.now();
    const next = new Map<string, number[]>();
    for (const [topic, ps] of assignment) {
      const sorted = [...ps].sort((a, b) => a - b);
      next.set(topic, sorted);
      for (const p of sorted) if (!this.since.has(key(topic, p))) this.since.set(key(topic, p), at);
    }
    this.target = next;
    this.enqueue(() => this.apply());
  }

  /**
   * The coordinator accepted a heartbeat: this member is in the group's current generation, and
   * no rebalance is under way.
   */
  heartbeat(): void {
    this.beats++;
    this.rebalancing = false;
  }

  /** Everything is lost (the client crashed or stopped): revoke it all. */
  lost(): void {
    this.fresh = true;
    this.target = new Map();
    this.enqueue(() => this.apply());
  }

  /** Resolves once every queued transition has run. */
  settled(): Promise<void> {
    return this.transition;
  }

  /** The assignment the handlers were last told about. */
  assignment(): Map<string, number[]> {
    return new Map(this.owned);
  }

  /** What this member says it holds when it joins the group. */
  claims(): Map<string, HeldPartition[]> {
    const out = new Map<string, HeldPartition[]>();
    for (const [topic, ps] of this.target) {
      const kept = ps.filter((p) => !this.letGo(topic, p));
      out.set(
        topic,
        kept.map((partition) => ({ partition, sinceMs: this.since.get(key(topic, partition)) ?? 0 })),
      );
    }
    return out;
  }

  /**
   * Passes to `onAssigned` again the owned partitions the handlers have not held for
   * `retakeAfterMs` and two accepted heartbeats, while no rebalance or transition is under way.
   * An accepted heartbeat says this member is in the group's current generation, whose assignment
   * is the one applied; the second one was sent after the partition was let go of (the first may
   * be the late answer to one sent before). A member cut off from the coordinator (heartbeats
   * failing, retried without any rebalance event) never retakes: it may be a generation behind.
   * Call it periodically (the client does, per heartbeat interval).
   */
  retake(): void {
    if (!this.handlers.holds || this.rebalancing || this.pending > 0 || this.target !== this.owned) return;
    const now = this.now();
    const seen = new Set<string>();
    for (const [topic, ps] of this.owned) {
      const due: number[] = [];
      for (const p of ps) {
        if (!this.letGo(topic, p)) continue;
        const k = key(topic, p);
        seen.add(k);
        const since = this.unheldSince.get(k) ?? { atMs: now, beats: this.beats };
        this.unheldSince.set(k, since);
        if (now - since.atMs >= this.opts.retakeAfterMs && this.beats - since.beats >= 2) due.push(p);
      }
      if (due.length === 0) continue;
      for (const p of due) {
        this.unheldSince.delete(key(topic, p));
        this.since.set(key(topic, p), now);
      }
      this.log.warn(
        { topic, partitions: due },
        'assigned partitions not held by the handlers: assigning them again',
      );
      this.enqueue(async () => {
        // Still owned and still let go of: a rebalance may have come in between.
        const again = due.filter((p) => (this.owned.get(topic) ?? []).includes(p) && this.letGo(topic, p));
        await this.assign(topic, again);
      });
    }
    for (const k of this.unheldSince.keys()) if (!seen.has(k)) this.unheldSince.delete(k);
  }

  private enqueue(step: () => Promise<void>): void {
    this.pending++;
    this.transition = this.transition
      .then(step)
      .catch((err: unknown) => {
        this.log.error({ err }, 'partition assignment transition failed');
      })
      .finally(() => this.pending--);
  }

  /** Brings the handlers from what they were told to the latest assignment. */
  private async apply(): Promise<void> {
    if (this.fresh) {
      this.fresh = false;
      const all = this.owned;
      this.owned = new Map();
      for (const [topic, ps] of all) {
        for (const p of ps) this.drop(topic, p);
        const held = ps.filter((p) => !this.letGoOf(topic, p, all));
        if (held.length > 0) await this.handlers.onRevoked?.(topic, held);
      }
    }
    const next = this.target;
    if (next === this.owned) return; // a later transition's assignment, applied already
    const before = this.owned;
    const changes: { topic: string; revoked: number[]; assigned: number[] }[] = [];
    for (const topic of new Set([...before.keys(), ...next.keys()])) {
      const after = new Set(next.get(topic) ?? []);
      // Held: owned, and not let go of by the handlers since.
      const held = (before.get(topic) ?? []).filter((p) => !this.letGoOf(topic, p, before));
      const revoked = held.filter((p) => !after.has(p));
      const assigned = [...after].filter((p) => !held.includes(p));
      for (const p of before.get(topic) ?? []) if (!after.has(p)) this.drop(topic, p);
      changes.push({ topic, revoked, assigned });
    }
    // Owned from now on, whatever the handlers make of it: `holds` says what they set up.
    this.owned = next;
    // Every topic's handlers are told, whatever another topic's did.
    let failed: unknown;
    for (const { topic, revoked, assigned } of changes) {
      try {
        if (revoked.length > 0) await this.handlers.onRevoked?.(topic, revoked);
        await this.assign(topic, assigned);
      } catch (err) {
        failed ??= err;
      }
    }
    if (failed !== undefined) throw failed;
  }

  private async assign(topic: string, partitions: number[]): Promise<void> {
    if (partitions.length === 0) return;
    for (const p of partitions) {
      this.settingUp.add(key(topic, p));
      this.unheldSince.delete(key(topic, p)); // a new setup: a failure of it waits its own time
    }
    try {
      await this.handlers.onAssigned?.(topic, partitions);
    } finally {
      for (const p of partitions) this.settingUp.delete(key(topic, p));
    }
  }

  /** Forgets an owned partition's state (its time too, unless the latest assignment has it). */
  private drop(topic: string, partition: number): void {
    this.opts.onDropped?.(topic, partition);
    this.unheldSince.delete(key(topic, partition));
    if (!(this.target.get(topic) ?? []).includes(partition)) this.since.delete(key(topic, partition));
  }

  /** An owned partition, not being set up, that the handlers no longer hold. */
  private letGo(topic: string, partition: number): boolean {
    return this.letGoOf(topic, partition, this.owned);
  }

  private letGoOf(topic: string, partition: number, owned: Map<string, number[]>): boolean {
    const holds = this.handlers.holds;
    if (!holds || this.settingUp.has(key(topic, partition))) return false;
    return (owned.get(topic) ?? []).includes(partition) && !holds(topic, partition);
  }
}

function key(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}
