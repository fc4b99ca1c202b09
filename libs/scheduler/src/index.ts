export { Scheduler } from './scheduler.js';
export { standByForHomeRegion } from './home-region-standby.js';
export type { SchedulerDeps } from './scheduler.js';
export { schedulerConfig, schedulerDefaults, schedulerEnv } from './config.js';
export type { SchedulerConfig, SchedulerOptions } from './config.js';
export { createSchedulerMetrics } from './scheduler-metrics.js';
export type { SchedulerMetrics } from './scheduler-metrics.js';
export { avroSchedulerCodec } from './avro-codec.js';
export { wheelIndexFactory } from './wheel-index.js';
export { knownNamesFromDb } from './known-names.js';
// The command rules live in @sched/command-rules (shared with the producer client); re-exported.
export { CommandRejection, jitteredDue, RejectReason, validateCommand } from '@sched/command-rules';
export type * from '@sched/command-rules';
export type { DueIndex } from './due-index.js';
