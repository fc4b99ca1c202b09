export { Contracts, type ContractSchemaIds, type ContractsOptions, SUBJECT_COMPATIBILITY } from './contracts';
export {
  CONTRACTS_ERROR_CODES,
  ContractsError,
  type ContractsErrorCode,
  type ContractsErrorDetails,
  isContractsError,
} from './contracts-error';
export { RejectionReason, type RejectionReasonCode, rejectionReasonFor } from './rejection-reasons';
export { commandKey } from './command-key';
export { checkBackwardCompatibility, type CompatibilityResult } from './compatibility';
export { createAvroType } from './avro-types';
export { SubjectCodec } from './subject-codec';
export { HEADER_BYTES, MAGIC_BYTE, readSchemaId } from './wire-format';
export * from './generated-types';
/** Sample values of every contract type, for tests of packages that produce or consume them. */
export * as contractSamples from './contract-samples';
// The schema side, re-exported so users of the contracts need one dependency.
export {
  COMMAND_CONTRACT,
  COMMAND_REJECTED_CONTRACT,
  CONTRACT_SCHEMAS,
  type ContractKey,
  type ContractSchema,
  DISPATCH_CONTRACT,
  dispatchTopic,
  JOB_EVENT_CONTRACT,
  releasedVersions,
  SUBJECTS,
  TOPICS,
} from '@sched/schemas';
