/** The owner's write was refused: its epoch is no longer the partition's current one. */
export class FencedError extends Error {
  readonly code = 'SCHED_E_FENCED';
  readonly retriable = false;
  constructor(
    readonly partition: number,
    readonly epoch: number,
    readonly statement: string,
  ) {
    super(`partition ${partition}: epoch ${epoch} is fenced off (${statement}); another owner took over`);
    this.name = 'FencedError';
  }
}

/**
 * SQL fragment: the fencing CTE every owner write starts with. `$1` = partition, `$2` = epoch.
 * It yields no row once the epoch moved on, so the write matches nothing. FOR KEY SHARE holds the
 * ownership row until this transaction ends: it conflicts only with FOR UPDATE, which is what an
 * epoch bump takes (partition_claim), so a bump waits for every in-flight owner write — while the
 * owner's own concurrent transactions (claims, applies, which update applied_offset with a
 * NO KEY UPDATE lock) never wait for each other. (FOR SHARE here serialised every claim with every
 * apply of the partition: ingest collapsed under dispatch load.)
 */
export const FENCE_CTE =
  'fence AS (SELECT epoch FROM partition_owner WHERE partition = $1 AND epoch = $2 FOR KEY SHARE)';
