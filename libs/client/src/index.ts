export {
  SchedulerClient,
  type CommandReceipt,
  type Instant,
  type JobSpec,
  type ScheduleSpec,
  type SchedulerClientOptions,
} from './client.js';
export { CommandRefusedError, isCommandRefused, WaitTimeoutError } from './client-error.js';
export {
  RejectionReason,
  type JobEvent,
  type JobEventType,
  type RejectionReasonCode,
} from '@sched/contracts';
