/**
 * Handler module for our worker app (`SCHED_WORKER_HANDLERS`): reports each handler start to the
 * bench and returns at once, so the figures measure the scheduler and its transport, not the job.
 * Reads `E2E_QUEUE` from the env the worker passes in.
 */
import { decodeJobRef, reportStart } from './report-starts.js';

interface JobLike {
  payload: Buffer;
  claimedAtMs: number;
}

interface WorkerLike {
  handle(queue: string, fn: (job: JobLike) => Promise<void>): unknown;
}

export function register(worker: WorkerLike, deps: { env: Record<string, string | undefined> }): void {
  const queue = deps.env.E2E_QUEUE;
  if (!queue) throw new Error('E2E_QUEUE must name the queue to handle');
  worker.handle(queue, async (job) => {
    const startMs = Date.now();
    const ref = decodeJobRef(job.payload.toString('utf8'));
    reportStart(ref.r, ref.i, startMs, job.claimedAtMs);
  });
}
