/** One entry of the due-time index: a job (or schedule) id, its due time and its fairness tag. */
export interface DueEntry {
  jobId: string;
  dueMs: number;
  /** Tenant and priority class (`FireTags`); 0 when unknown. */
  tag: number;
}

/** What the engine needs of its in-memory due-time index (one per owned partition). */
export interface DueIndex {
  readonly size: number;
  /** Adds or moves an entry; without `tag` a moved entry keeps its tag and a new one gets 0. */
  upsert(jobId: string, dueMs: number, tag?: number): void;
  remove(jobId: string): boolean;
  has(jobId: string): boolean;
  /** The due time of a held entry, or undefined when it holds none. */
  dueMsOf(jobId: string): number | undefined;
  /** Earliest due time held, or Infinity when empty (a lower bound is acceptable). */
  nextDueMs(): number;
  /** Entries due at or before nowMs, in due order, at most maxBatch. */
  advance(nowMs: number, maxBatch: number): DueEntry[];
}
