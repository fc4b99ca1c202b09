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

  it('refuses a start rate or burst that admits nobody, and a burst without a rate', () => {
    const h = async () => undefined;
    for (const opts of [
      { ratePerSec: 0 },
      { ratePerSec: -2 },
      { ratePerSec: Infinity },
      { ratePerSec: 5, rateBurst: 0 },
      { rateBurst: 3 },
    ])
      expect(() => idleWorker().handle('q', h, opts), JSON.stringify(opts)).toThrow(
        expect.objectContaining({ code: 'SCHED_E_BAD_OPTION' }),
      );
    expect(() => idleWorker().handle('q', h, { ratePerSec: 0.5 })).not.toThrow();
    expect(() => idleWorker().handle('q', h, { ratePerSec: 50, rateBurst: 10 })).not.toThrow();
  });
});
