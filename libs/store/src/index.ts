export { migrate, dropSchema, assertSchemaName, OUTBOX_PUBLICATION, CDC_HEARTBEAT_TABLE } from './migrate.js';
export type { MigrateOptions, MigrateResult } from './migrate.js';
export { createPool, inTransaction } from './pool.js';
export type { PoolOptions } from './pool.js';
export { FencedError } from './fencing.js';
export {
  commandTopicLayout,
  partitionClaim,
  partitionAdvanceOffset,
  partitionOwnerList,
} from './partition-store.js';
export {
  homeRegion,
  regionPromote,
  regionClaimUnset,
  NotHomeRegionError,
  RegionPromoteError,
  REGION_PROMOTE_PERMISSION,
} from './home-region.js';
export type { HomeRegion } from './home-region.js';
export type { PartitionOwnership, OwnerRow } from './partition-store.js';
export {
  commandMarkApplied,
  commandRecordOutcomes,
  commandStatus,
  commandIssue,
  jobCreateBatch,
  jobCreateDispatching,
  jobCancel,
  jobReschedule,
} from './job-apply.js';
export type { CommandMark, CommandStatus, NewJob, VersionedJob, RescheduleRequest } from './job-apply.js';
export {
  jobClaimDue,
  jobClaimDueAcross,
  jobClaimDueDispatch,
  jobReconcileDue,
  jobExpireDue,
  queueUnstarted,
  NO_ADMISSION,
  jobReconcileDueDispatch,
  jobOverdueFair,
} from './job-claim.js';
export type { ClaimAdmission, ClaimedJob, OverdueJob, OwnedPartition } from './job-claim.js';
export { outboxEmit, outboxEmitReady, outboxSlotState } from './outbox.js';
export type { OutboxRow, SlotState } from './outbox.js';
export { DEFAULT_REAP_BUDGET, leaseReap } from './lease-reap.js';
export { LEASE_FIRST_CHECK_MS } from './lease-check.js';
export type { ReapBudget, ReapedJob } from './lease-reap.js';
export { workerBeat, workerGone, workersGone, workerList } from './worker-liveness.js';
export type { WorkerBeat, GoneWorker } from './worker-liveness.js';
export { jobLoadWindow } from './job-window.js';
export { DISPATCH_SQL_FIELDS } from './dispatch-record.js';
export type { DispatchedJob } from './dispatch-record.js';
export { pruneFinishedJobs, pruneOlderThan } from './retention.js';
export { queueDepth } from './queue-depth.js';
export type { QueueDepthRow } from './queue-depth.js';
export {
  leaseAcquire,
  leaseAcquireMany,
  leaseRenew,
  jobComplete,
  jobSucceedMany,
  jobState,
  startsToAskAgain,
  attemptEnd,
} from './lease.js';
export type { Lease, AttemptOutcome, Completion, LeaseRequest, SuccessReport } from './lease.js';
export {
  scheduleUpsert,
  scheduleGetForUpdate,
  scheduleLockDue,
  scheduleAdvance,
  scheduleSetState,
  occurrenceRecord,
  scheduleLoadWindow,
  occurrenceList,
  jobStates,
} from './schedule-store.js';
export type {
  ScheduleRow,
  ScheduleAdvance,
  OccurrenceRecord,
  OccurrenceFate,
  MisfirePolicy,
  OverlapPolicy,
  ScheduleState,
} from './schedule-store.js';
export {
  bucketSize,
  queueDispatchRates,
  queueGet,
  queueList,
  queueSetPaused,
  queuePut,
  tenantCommandTake,
  tenantGet,
  tenantList,
  tenantPendingCaps,
  tenantPendingCounts,
  tenantPut,
} from './quotas.js';
export type { QueueRow, TenantQuotas, TenantRow } from './quotas.js';
export {
  apiKeyByDigest,
  apiKeyInsert,
  apiKeyList,
  apiKeyRevoke,
  tenantSetDisabled,
} from './api-key-store.js';
export type { ApiKeyRow } from './api-key-store.js';
