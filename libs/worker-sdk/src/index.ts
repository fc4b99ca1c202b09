export { Worker, fingerprint } from './worker.js';
export type { WorkerDeps } from './worker.js';
export { workerConfig, workerDefaults } from './config.js';
export type { WorkerConfig, WorkerOptions } from './config.js';
export { createWorkerMetrics } from './worker-metrics.js';
export type { WorkerMetrics } from './worker-metrics.js';
export { DedupeSet } from './dedupe-set.js';
export type * from './types.js';
export { PermanentFailure, Throttled, TransientFailure } from '@sched/retry-policy';
