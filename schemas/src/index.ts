export type {
  AvroArraySchema,
  AvroEnumSchema,
  AvroField,
  AvroFixedSchema,
  AvroMapSchema,
  AvroNamedSchema,
  AvroPrimitive,
  AvroRecordSchema,
  AvroSchema,
  AvroWrappedSchema,
} from './avro-schema';
export { isPrimitive, isRecordSchema, qualify, shortName } from './avro-schema';
export { composeSchema } from './compose-schema';
export type { ReleasedSchema } from './schema-files';
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
  SCHEMA_FILES,
  SCHEMA_NAMESPACE,
  SUBJECTS,
  TOPICS,
} from './contract-schemas';
