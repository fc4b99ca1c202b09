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
 * FOR SHARE blocks a concurrent epoch bump (which locks the row FOR UPDATE) until this
 * transaction ends, and yields no row once the epoch moved on, so the write matches nothing.
 */
export const FENCE_CTE =
  'fence AS (SELECT epoch FROM partition_owner WHERE partition = $1 AND epoch = $2 FOR SHARE)';
