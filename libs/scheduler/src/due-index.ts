/** What the engine needs of its in-memory due-time index (one per owned partition). */
export interface DueIndex {
  readonly size: number;
  /** Adds or moves an entry. */
  upsert(jobId: string, dueMs: number): void;
  remove(jobId: string): boolean;
  /** Earliest due time held, or Infinity when empty (a lower bound is acceptable). */
  nextDueMs(): number;
  /** Entries due at or before nowMs, in due order, at most maxBatch. */
  advance(nowMs: number, maxBatch: number): { jobId: string; dueMs: number }[];
}
