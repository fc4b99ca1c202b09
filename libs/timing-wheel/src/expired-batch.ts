/** One job id and its due time. */
export interface WheelEntry {
  readonly id: string;
  /** Due time in ms since the epoch: an integer in [0, Number.MAX_SAFE_INTEGER]. */
  readonly dueMs: number;
  /** The caller's int32 tag (a tenant, a priority class); 0 when not given. */
  readonly tag?: number;
}

/**
 * The entries one `advance` call returned, in due order (ties in no promised order). The wheel reuses
 * this object: it is valid until the next `advance` call on the same wheel; copy what you keep.
 */
export class ExpiredBatch {
  /** Number of entries in this batch. */
  length = 0;
  /** `ids[i]` for i < length. */
  readonly ids: string[] = [];
  /** `dueMs[i]` for i < length; the buffer may be longer than `length`. */
  dueMs = new Float64Array(16);
  /** `tags[i]` for i < length: the tag each entry was added with. */
  tags = new Int32Array(16);

  /** Copies the batch out as plain objects, `tag` only where it is not 0 (the hot path reads the arrays). */
  toArray(): WheelEntry[] {
    const entries: WheelEntry[] = [];
    for (let i = 0; i < this.length; i++) {
      const tag = this.tags[i]!;
      entries.push(
        tag === 0
          ? { id: this.ids[i]!, dueMs: this.dueMs[i]! }
          : { id: this.ids[i]!, dueMs: this.dueMs[i]!, tag },
      );
    }
    return entries;
  }

  /** @internal Makes room for `maxBatch` entries. */
  prepare(maxBatch: number): void {
    if (this.dueMs.length < maxBatch) {
      this.dueMs = new Float64Array(maxBatch);
      this.tags = new Int32Array(maxBatch);
    }
  }

  /** @internal Seals the batch at `length` entries. */
  seal(length: number): void {
    this.length = length;
    this.ids.length = length;
  }
}
