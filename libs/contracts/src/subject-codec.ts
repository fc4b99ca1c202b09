import avro from 'avsc';
import type { Type } from 'avsc';
import type { ContractSchema } from '@sched/schemas';
import { createAvroType } from './avro-types';
import { ContractsError } from './contracts-error';
import { HEADER_BYTES, writeHeader } from './wire-format';

type Resolver = ReturnType<Type['createResolver']>;

/** Encode buffers up to this size are kept for reuse; a larger one is used once and dropped. */
const MAX_KEPT_SCRATCH_BYTES = 1 << 20;

/**
 * Encoding and decoding of one contract (one subject), without any I/O: the registry side lives in
 * `Contracts`, which tells a codec its registered schema id and the writer schemas it meets.
 *
 * - `encode` is synchronous and allocation-light: it writes the header and the Avro body into a
 *   reusable scratch buffer and returns one exact-size copy. No HTTP, no validation pass on success
 *   (avsc's writers check every field as they go); on failure a validation pass names the fields.
 * - `decodeFramed` is synchronous once the writer id is known: the writer schema equal to ours is
 *   read directly, an older/newer compatible writer through a resolver cached per writer id.
 *
 * Not safe to share between worker threads (the scratch buffer); within one thread it is, since no
 * method awaits.
 */
export class SubjectCodec<TValue, TInput> {
  readonly contract: ContractSchema;
  /** Reader and writer type of the current schema. */
  readonly type: Type;
  private schemaId: number | undefined;
  /** Writer id → resolver (null: writer schema equals ours, read directly). */
  private readonly readers = new Map<number, Resolver | null>();
  /** Writer id → why it cannot be read as this contract (a fresh error is thrown each time). */
  private readonly refusals = new Map<number, { readonly why: string; readonly cause: unknown }>();
  private scratch = Buffer.allocUnsafe(16 * 1024);

  constructor(contract: ContractSchema) {
    this.contract = contract;
    this.type = createAvroType(contract.schema);
  }

  /** The id the current schema is registered under, once known. */
  get registeredSchemaId(): number | undefined {
    return this.schemaId;
  }

  /** Records the id the registry gave the current schema; encodes use it from now on. */
  useSchemaId(schemaId: number): void {
    this.schemaId = schemaId;
    this.readers.set(schemaId, null);
    this.refusals.delete(schemaId);
  }

  /** The id encodes use. Throws SCHED_E_NOT_REGISTERED before `useSchemaId`. */
  private requireSchemaId(): number {
    const schemaId = this.schemaId;
    if (schemaId === undefined) {
      throw new ContractsError(
        'SCHED_E_NOT_REGISTERED',
        `${this.contract.subject}: no schema id yet; await contracts.registerAll() before encoding`,
        { subject: this.contract.subject },
      );
    }
    return schemaId;
  }

  /** The Confluent framing (magic byte, schema id) an encoded record starts with. */
  header(): Buffer {
    const header = Buffer.alloc(HEADER_BYTES);
    writeHeader(header, this.requireSchemaId());
    return header;
  }

  /** Confluent-framed Avro of `value`. Throws SCHED_E_NOT_REGISTERED or SCHED_E_INVALID_MESSAGE. */
  encode(value: TInput): Buffer {
    const schemaId = this.requireSchemaId();
    let target = this.scratch;
    writeHeader(target, schemaId);
    let end = this.write(value, target);
    if (end < 0) {
      // avsc returns minus the number of missing bytes when the buffer was too small.
      target = Buffer.allocUnsafe(Math.max(target.length * 2, target.length - end));
      writeHeader(target, schemaId);
      end = this.write(value, target);
      if (target.length <= MAX_KEPT_SCRATCH_BYTES) this.scratch = target;
    }
    return Buffer.from(target.subarray(0, end));
  }

  /** True when `decodeFramed` can run for this writer id without asking the registry. */
  knowsWriter(schemaId: number): boolean {
    return this.readers.has(schemaId) || this.refusals.has(schemaId);
  }

  /**
   * Prepares to read records written with `writer` (registered as `schemaId`): directly when it is
   * our schema, through a cached resolver when it is compatible, or remembered as refused
   * (SCHED_E_INCOMPATIBLE_SCHEMA) when it is not.
   */
  learnWriter(schemaId: number, writer: unknown): void {
    if (!avro.Type.isType(writer)) {
      this.refuse(schemaId, 'it is not an Avro schema');
      return;
    }
    const writerType = writer as Type;
    if (writerType.equals(this.type)) {
      this.readers.set(schemaId, null);
      return;
    }
    try {
      this.readers.set(schemaId, this.type.createResolver(writerType));
    } catch (error) {
      this.refuse(
        schemaId,
        `${writerType.name ?? writerType.typeName} cannot be read as ${this.contract.fullName} (${(error as Error).message})`,
        error,
      );
    }
  }

  /** Decodes a framed record whose writer id was learnt; `schemaId` is the id in its header. */
  decodeFramed(bytes: Buffer, schemaId: number): TValue {
    const reader = this.readers.get(schemaId);
    if (reader === undefined) {
      const refusal = this.refusals.get(schemaId);
      if (refusal === undefined)
        throw new Error(`SubjectCodec: writer ${schemaId} was not learnt before decoding`);
      throw new ContractsError(
        'SCHED_E_INCOMPATIBLE_SCHEMA',
        `${this.contract.subject}: writer schema ${schemaId}: ${refusal.why}`,
        { schemaId, subject: this.contract.subject, cause: refusal.cause },
      );
    }
    try {
      return this.type.fromBuffer(bytes.subarray(HEADER_BYTES), reader ?? undefined) as TValue;
    } catch (error) {
      throw new ContractsError(
        'SCHED_E_UNDECODABLE',
        `${this.contract.subject}: Avro body does not parse with writer schema ${schemaId} (${(error as Error).message})`,
        { schemaId, subject: this.contract.subject, cause: error },
      );
    }
  }

  private write(value: TInput, target: Buffer): number {
    try {
      return this.type.encode(value, target, HEADER_BYTES);
    } catch (error) {
      const paths: string[][] = [];
      this.type.isValid(value, { errorHook: (path) => paths.push([...path]) });
      const where = paths.length > 0 ? paths.map((p) => p.join('.') || '(root)').join(', ') : '(unknown)';
      throw new ContractsError(
        'SCHED_E_INVALID_MESSAGE',
        `${this.contract.fullName} value does not match its schema at ${where} (${(error as Error).message})`,
        { subject: this.contract.subject, paths, cause: error },
      );
    }
  }

  private refuse(schemaId: number, why: string, cause?: unknown): void {
    this.refusals.set(schemaId, { why, cause });
  }
}
