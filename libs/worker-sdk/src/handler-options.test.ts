import { describe, expect, it } from 'vitest';
import { silentLogger } from '@sched/logging';
import { workerConfig } from './config.js';
import { Worker, type WorkerDeps } from './worker.js';
import { createWorkerMetrics } from './worker-metrics.js';

/** A worker that is never started: `handle` checks its options before anything connects. */
function idleWorker(): Worker {
  return new Worker({
    config: workerConfig({}),
    kafka: {} as WorkerDeps['kafka'],
    pool: {} as WorkerDeps['pool'],
    codec: {} as WorkerDeps['codec'],
    metrics: createWorkerMetrics('test'),
    log: silentLogger(),
  });
}

describe('handler options', () => {
  it('refuses a queue concurrency that admits nobody, with a clear code', () => {
    for (const bad of [0, -1, 1.5]) {
      expect(() => idleWorker().handle('q', async () => undefined, { concurrency: bad })).toThrow(
        expect.objectContaining({ code: 'SCHED_E_BAD_OPTION' }),
      );
    }
  });

  it('accepts a positive queue concurrency, or none', () => {
    expect(() => idleWorker().handle('q', async () => undefined, { concurrency: 3 })).not.toThrow();
    expect(() => idleWorker().handle('q', async () => undefined)).not.toThrow();
  });
});
