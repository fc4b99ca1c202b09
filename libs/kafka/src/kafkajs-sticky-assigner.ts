import kafkajsModule, { type PartitionAssigner } from 'kafkajs';
import { decodeHeld, encodeHeld, stickyAssign, type HeldPartition } from './sticky-assignment.js';

/** The protocol name members agree on; members that do not know it fall back to round robin. */
export const STICKY_ASSIGNER_NAME = 'SchedSticky';

/**
 * `stickyAssign` as a kafkajs partition assigner. Each member sends, with every join, the
 * partitions `held()` says it holds (and since when) as the protocol's user data; the group leader
 * reads every member's and assigns. Listed before kafkajs's round robin, so a group whose members
 * all know it uses it, and a group in the middle of a rolling upgrade agrees on round robin.
 */
export function stickyAssigner(held: () => Map<string, HeldPartition[]>): PartitionAssigner {
  const { MemberMetadata, MemberAssignment } = kafkajsModule.AssignerProtocol;
  return ({ cluster }) => ({
    name: STICKY_ASSIGNER_NAME,
    version: 1,
    async assign({ members, topics }) {
      const claims = members.map((m) => {
        let meta: { topics: string[]; userData: Buffer } | null = null;
        try {
          meta = MemberMetadata.decode(m.memberMetadata);
        } catch {
          // Unreadable: this member is taken as subscribed like the leader, holding nothing.
        }
        return { memberId: m.memberId, topics: meta?.topics ?? topics, held: decodeHeld(meta?.userData) };
      });
      // Every member's topics, not only the leader's (workers of one group may serve different queues).
      const all = [...new Set([...topics, ...claims.flatMap((c) => c.topics)])];
      const others = all.filter((t) => !topics.includes(t));
      if (others.length > 0) {
        await cluster.addMultipleTargetTopics(others);
        await cluster.refreshMetadata();
      }
      const partitions = new Map(
        all.map((t) => [t, cluster.findTopicPartitionMetadata(t).map((m) => m.partitionId)] as const),
      );
      const assignment = stickyAssign(claims, partitions);
      return [...assignment].map(([memberId, byTopic]) => ({
        memberId,
        memberAssignment: MemberAssignment.encode({
          version: 1,
          assignment: Object.fromEntries(byTopic),
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name: STICKY_ASSIGNER_NAME,
        metadata: MemberMetadata.encode({ version: 1, topics, userData: encodeHeld(held()) }),
      };
    },
  });
}
