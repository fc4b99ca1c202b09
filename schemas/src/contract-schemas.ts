import { type AvroNamedSchema, type AvroRecordSchema, deepFreeze } from './avro-schema';
import { composeSchema } from './compose-schema';
import { AVRO_DIR, type ReleasedSchema, readReleasedVersions, readSchemaDirectory } from './schema-files';

/** Namespace of every record in this contract version. A breaking redesign would be `io.sched.v2`. */
export const SCHEMA_NAMESPACE = 'io.sched.v1';

/** Kafka topics the contracts are written for. */
export const TOPICS = {
  /** Every command (Command envelope); key = job id or schedule id, plain UTF-8. */
  commands: 'sched.commands',
  /** Job lifecycle events (JobEvent); key = job id. */
  events: 'sched.events',
  /** Commands the scheduler could not apply (CommandRejected); key = the original key. */
  commandsRejected: 'sched.commands.rejected',
  /** Prefix of the per-queue dispatch topics (Dispatch); see dispatchTopic(). */
  dispatchPrefix: 'sched.dispatch.',
} as const;

/** `sched.dispatch.<queue>`: the topic Debezium routes a queue's Dispatch records to. */
export function dispatchTopic(queue: string): string {
  return `${TOPICS.dispatchPrefix}${queue}`;
}

/**
 * Schema registry subjects.
 *
 * - Topics with a fixed name use TopicNameStrategy (`<topic>-value`), the Confluent default, so any
 *   Confluent-aware tool (kcat, Connect converters, UIs) finds the schema of the topic by itself.
 * - Dispatch uses RecordNameStrategy (the record's full name): its topic is one per queue, queues are
 *   created at run time, and they all carry the same record, so one subject with one compatibility
 *   history serves them all instead of a subject per queue registered on the fly.
 */
export const SUBJECTS = {
  command: `${TOPICS.commands}-value`,
  dispatch: `${SCHEMA_NAMESPACE}.Dispatch`,
  event: `${TOPICS.events}-value`,
  rejected: `${TOPICS.commandsRejected}-value`,
} as const;

export type ContractKey = keyof typeof SUBJECTS;

/** One registered contract: a root record, composed to a self-contained schema, and its subject. */
export interface ContractSchema {
  readonly key: ContractKey;
  /** Short record name, also the folder name under `schemas/released/`. */
  readonly name: string;
  readonly fullName: string;
  readonly subject: string;
  /** Self-contained schema (every referenced named type inlined): exactly what gets registered. */
  readonly schema: AvroRecordSchema;
}

/** The `.avsc` files, by full name, exactly as written (references between files not resolved). */
export const SCHEMA_FILES: ReadonlyMap<string, AvroNamedSchema> = deepFreezeMap(
  readSchemaDirectory(AVRO_DIR),
);

function contract(key: ContractKey, name: string): ContractSchema {
  const fullName = `${SCHEMA_NAMESPACE}.${name}`;
  return deepFreeze({
    key,
    name,
    fullName,
    subject: SUBJECTS[key],
    schema: composeSchema(fullName, SCHEMA_FILES),
  });
}

export const COMMAND_CONTRACT = contract('command', 'Command');
export const DISPATCH_CONTRACT = contract('dispatch', 'Dispatch');
export const JOB_EVENT_CONTRACT = contract('event', 'JobEvent');
export const COMMAND_REJECTED_CONTRACT = contract('rejected', 'CommandRejected');

/** Every registered contract, in a fixed order (used for registration, codegen and release). */
export const CONTRACT_SCHEMAS: readonly ContractSchema[] = Object.freeze([
  COMMAND_CONTRACT,
  DISPATCH_CONTRACT,
  JOB_EVENT_CONTRACT,
  COMMAND_REJECTED_CONTRACT,
]);

/**
 * Released versions of a contract (by short name), oldest first. Reads `schemas/released/` on each
 * call; meant for tests and the release script, not for hot paths.
 */
export function releasedVersions(name: string): readonly ReleasedSchema[] {
  return readReleasedVersions(name);
}

function deepFreezeMap<K, V>(map: Map<K, V>): ReadonlyMap<K, V> {
  for (const value of map.values()) deepFreeze(value);
  return map;
}
