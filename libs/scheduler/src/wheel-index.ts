import { TimingWheel } from '@sched/timing-wheel';
import type { DueEntry, DueIndex } from './due-index.js';

/** A DueIndex over the hierarchical timing wheel; one wheel per owned partition. */
export function wheelIndexFactory(
  options: { wheelBits?: number; cascadeBudget?: number } = {},
): () => DueIndex {
  return () => {
    const wheel = new TimingWheel({ startMs: Date.now(), ...options });
    return {
      get size() {
        return wheel.size;
      },
      upsert(jobId, dueMs, tag) {
        if (!wheel.rescheduleById(jobId, dueMs, tag)) wheel.add(jobId, dueMs, tag ?? 0);
      },
      remove(jobId) {
        return wheel.cancelById(jobId);
      },
      has(jobId) {
        return wheel.has(jobId);
      },
      dueMsOf(jobId) {
        return wheel.dueMsOf(jobId);
      },
      nextDueMs() {
        return wheel.nextDueMs() ?? Infinity;
      },
      advance(nowMs, maxBatch) {
        const batch = wheel.advance(nowMs, maxBatch);
        const out: DueEntry[] = new Array(batch.length);
        for (let i = 0; i < batch.length; i++)
          out[i] = { jobId: batch.ids[i]!, dueMs: batch.dueMs[i]!, tag: batch.tags[i]! };
        return out;
      },
    };
  };
}
