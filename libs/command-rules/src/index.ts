/**
 * The rules a command must keep, in one place: the scheduler rejects a record that breaks them, and
 * the producer client (`@sched/client`) refuses to send one, through the same functions.
 */
export * from './commands.js';
export {
  compileScheduleRecurrence,
  DEFAULT_VALIDATION_LIMITS,
  jitteredDue,
  MAX_BUSINESS_KEY_CHARS,
  validateCommand,
  type KnownNames,
  type ValidationLimits,
} from './command-validation.js';
export { toEngine } from './to-engine.js';
