import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import {
  COMMAND_CONTRACT,
  COMMAND_REJECTED_CONTRACT,
  type ContractKey,
  type ContractSchema,
  DISPATCH_CONTRACT,
  JOB_EVENT_CONTRACT,
} from '@sched/schemas';
import { avroTypeOptions, createAvroType } from './avro-types';
import { ContractsError, isContractsError } from './contracts-error';
import type {
  Command,
  CommandInput,
  CommandRejected,
  CommandRejectedInput,
  Dispatch,
  DispatchInput,
  JobEvent,
  JobEventInput,
} from './generated-types';
import { SubjectCodec } from './subject-codec';
import { readSchemaId } from './wire-format';

export interface ContractsOptions {
  /**
   * Base URL of the registry's Confluent-compatible API, without a trailing slash. For Apicurio
   * Registry: `http://<host>:<port>/apis/ccompat/v7`.
   */
  readonly registryUrl: string;
  /**
   * How long a schema id the registry answered 404 for is remembered as unknown, in milliseconds.
   * Within that time a record with that id fails at once without an HTTP request, so a burst of
   * garbage cannot flood the registry. Default 30_000; 0 asks every time.
   */
  readonly unknownSchemaIdTtlMs?: number;
  /** Attempts per registry request on network errors and 5xx answers (exponential backoff from 100 ms). Default 3. */
  readonly registryRetries?: number;
  /**
   * Longest wait for one registry answer, in milliseconds; a request still unanswered then is
   * aborted, and a registration is tried again (it is idempotent), up to registryRetries more
   * times. Default 10_000. Without it one request the registry never answers (seen once, when two
   * schedulers registered at the same moment) holds a process's start-up for good.
   */
  readonly registryTimeoutMs?: number;
  /** Clock for the unknown-id memory, epoch milliseconds. Default `Date.now`. */
  readonly nowMs?: () => number;
}

/** Registry ids of the current schemas, by contract. */
export type ContractSchemaIds = Readonly<Record<ContractKey, number>>;

/** Compatibility level set on every subject this class registers. */
export const SUBJECT_COMPATIBILITY = 'BACKWARD';

const UNKNOWN_ID_MEMORY_LIMIT = 10_000;

interface ResolvedOptions {
  readonly registryUrl: string;
  readonly unknownSchemaIdTtlMs: number;
  readonly registryRetries: number;
  readonly registryTimeoutMs: number;
  readonly nowMs: () => number;
}

/**
 * The Avro contracts of the scheduler, spoken through a Confluent-compatible schema registry.
 *
 * Lifecycle: construct, `await registerAll()` once at start-up (idempotent: registering an unchanged
 * schema returns its existing id), then encode and decode.
 *
 * - encode* are synchronous: they frame with the id cached by registerAll() and write with avsc
 *   directly, with no HTTP per record (the registry client's own `encode` is async and copies twice).
 * - decode* are async only the first time a schema id is seen: the writer schema is fetched once
 *   (the registry client caches it by id and collapses concurrent fetches), a resolver to the
 *   current schema is built once per writer id, and every later record with that id decodes
 *   synchronously inside the returned promise.
 * - Errors are ContractsError with a stable code and `retriable` (see contracts-error.ts). For a
 *   command consumer: retriable === false means the record itself is bad and belongs on
 *   sched.commands.rejected; retriable === true (registry unreachable) means pause and retry.
 *
 * One instance per process is enough and intended: it holds the id caches. Safe to call from many
 * concurrent async tasks in one thread.
 */
export class Contracts {
  private readonly options: ResolvedOptions;
  private readonly registry: SchemaRegistry;
  private readonly unknownIds = new Map<number, number>();
  private readonly command = new SubjectCodec<Command, CommandInput>(COMMAND_CONTRACT);
  private readonly dispatch = new SubjectCodec<Dispatch, DispatchInput>(DISPATCH_CONTRACT);
  private readonly event = new SubjectCodec<JobEvent, JobEventInput>(JOB_EVENT_CONTRACT);
  private readonly rejected = new SubjectCodec<CommandRejected, CommandRejectedInput>(
    COMMAND_REJECTED_CONTRACT,
  );

  constructor(options: ContractsOptions) {
    this.options = resolveOptions(options);
    this.registry = new SchemaRegistry(
      {
        host: this.options.registryUrl,
        retry: { retries: this.options.registryRetries },
        middlewares: [requestTimeout(this.options.registryTimeoutMs)],
      },
      { [SchemaType.AVRO]: avroTypeOptions() },
    );
  }

  /**
   * Sets BACKWARD compatibility on each subject and registers the current schema of every contract,
   * caching the ids for encoding. Throws SCHED_E_SCHEMA_REFUSED if the registry finds a current
   * schema incompatible with what the subject already holds, SCHED_E_REGISTRY_UNAVAILABLE if it
   * cannot be reached.
   */
  async registerAll(): Promise<ContractSchemaIds> {
    const codecs = [this.command, this.dispatch, this.event, this.rejected] as const;
    const ids = await Promise.all(
      codecs.map((codec) => this.registerWithRetries(codec.contract.subject, codec.contract.schema)),
    );
    const result = {} as Record<ContractKey, number>;
    codecs.forEach((codec, i) => {
      const id = ids[i] as number;
      codec.useSchemaId(id);
      result[codec.contract.key] = id;
    });
    return Object.freeze(result);
  }

  /** registerSchema, tried again while the registry is unreachable or does not answer in time. */
  private async registerWithRetries(subject: string, schema: object): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.registerSchema(subject, schema);
      } catch (error) {
        const retriable = isContractsError(error) && error.code === 'SCHED_E_REGISTRY_UNAVAILABLE';
        if (!retriable || attempt >= this.options.registryRetries) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)));
      }
    }
  }

  /**
   * Registers `schema` (a self-contained Avro schema as JSON) under `subject` after setting the
   * subject's compatibility to BACKWARD, and returns its id. Used by registerAll(); public for tools
   * and tests that need a subject of their own. An invalid schema is refused (SCHED_E_SCHEMA_REFUSED)
   * before any request.
   */
  async registerSchema(subject: string, schema: object): Promise<number> {
    try {
      createAvroType(schema);
    } catch (error) {
      throw new ContractsError(
        'SCHED_E_SCHEMA_REFUSED',
        `${subject}: not a valid Avro schema (${(error as Error).message})`,
        {
          subject,
          cause: error,
        },
      );
    }
    await this.setCompatibility(subject);
    try {
      const { id } = await this.registry.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
        { subject, compatibility: COMPATIBILITY.BACKWARD },
      );
      return id;
    } catch (error) {
      throw registryError(error, { subject, refusal: true });
    }
  }

  /** Ids the current schemas were registered under, for those registered so far. */
  schemaIds(): Partial<ContractSchemaIds> {
    const ids: Partial<Record<ContractKey, number>> = {};
    for (const codec of [this.command, this.dispatch, this.event, this.rejected]) {
      if (codec.registeredSchemaId !== undefined) ids[codec.contract.key] = codec.registeredSchemaId;
    }
    return ids;
  }

  encodeCommand(command: CommandInput): Buffer {
    return this.command.encode(command);
  }

  decodeCommand(bytes: Buffer | null): Promise<Command> {
    return this.decode(this.command, bytes);
  }

  encodeDispatch(dispatch: DispatchInput): Buffer {
    return this.dispatch.encode(dispatch);
  }

  /**
   * The 5 bytes a Dispatch record starts with (magic byte, schema id), for a writer that encodes the
   * body itself: the scheduler's claim, whose record the connector's router encodes from the fields
   * Postgres emits (store migration 015).
   */
  dispatchHeader(): Buffer {
    return this.dispatch.header();
  }

  decodeDispatch(bytes: Buffer | null): Promise<Dispatch> {
    return this.decode(this.dispatch, bytes);
  }

  encodeEvent(event: JobEventInput): Buffer {
    return this.event.encode(event);
  }

  decodeEvent(bytes: Buffer | null): Promise<JobEvent> {
    return this.decode(this.event, bytes);
  }

  encodeRejected(rejected: CommandRejectedInput): Buffer {
    return this.rejected.encode(rejected);
  }

  decodeRejected(bytes: Buffer | null): Promise<CommandRejected> {
    return this.decode(this.rejected, bytes);
  }

  private async decode<TValue, TInput>(
    codec: SubjectCodec<TValue, TInput>,
    bytes: Buffer | null,
  ): Promise<TValue> {
    const schemaId = readSchemaId(bytes);
    if (!codec.knowsWriter(schemaId))
      codec.learnWriter(schemaId, await this.writerSchema(schemaId, codec.contract));
    return codec.decodeFramed(bytes as Buffer, schemaId);
  }

  /** The writer schema registered as `schemaId`, from the client's cache or the registry. */
  private async writerSchema(schemaId: number, contract: ContractSchema): Promise<unknown> {
    const forgetAt = this.unknownIds.get(schemaId);
    if (forgetAt !== undefined) {
      if (this.options.nowMs() < forgetAt) throw unknownSchemaId(schemaId, contract);
      this.unknownIds.delete(schemaId);
    }
    try {
      return await this.registry.getSchema(schemaId);
    } catch (error) {
      if (statusOf(error) === 404) {
        this.rememberUnknown(schemaId);
        throw unknownSchemaId(schemaId, contract, error);
      }
      throw registryError(error, { subject: contract.subject, schemaId, refusal: false });
    }
  }

  private rememberUnknown(schemaId: number): void {
    if (this.options.unknownSchemaIdTtlMs === 0) return;
    if (this.unknownIds.size >= UNKNOWN_ID_MEMORY_LIMIT) this.unknownIds.clear();
    this.unknownIds.set(schemaId, this.options.nowMs() + this.options.unknownSchemaIdTtlMs);
  }

  private async setCompatibility(subject: string): Promise<void> {
    const url = `${this.options.registryUrl}/config/${encodeURIComponent(subject)}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json' },
        body: JSON.stringify({ compatibility: SUBJECT_COMPATIBILITY }),
        signal: AbortSignal.timeout(this.options.registryTimeoutMs),
      });
    } catch (error) {
      throw new ContractsError(
        'SCHED_E_REGISTRY_UNAVAILABLE',
        `PUT ${url} failed: ${(error as Error).message}`,
        {
          subject,
          cause: error,
        },
      );
    }
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      const code = response.status === 422 ? 'SCHED_E_SCHEMA_REFUSED' : 'SCHED_E_REGISTRY_UNAVAILABLE';
      throw new ContractsError(code, `PUT ${url} answered ${response.status}: ${text}`, {
        subject,
        status: response.status,
      });
    }
  }
}

function resolveOptions(options: ContractsOptions): ResolvedOptions {
  const {
    registryUrl,
    unknownSchemaIdTtlMs = 30_000,
    registryRetries = 3,
    registryTimeoutMs = 10_000,
    nowMs = Date.now,
  } = options;
  let protocol: string | undefined;
  try {
    protocol = new URL(registryUrl).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new TypeError(
      `Contracts: registryUrl must be an http(s) URL such as http://127.0.0.1:8081/apis/ccompat/v7, got ${JSON.stringify(registryUrl)}`,
    );
  }
  if (!Number.isFinite(unknownSchemaIdTtlMs) || unknownSchemaIdTtlMs < 0) {
    throw new TypeError(
      `Contracts: unknownSchemaIdTtlMs must be a finite number >= 0, got ${unknownSchemaIdTtlMs}`,
    );
  }
  if (!Number.isInteger(registryRetries) || registryRetries < 0) {
    throw new TypeError(`Contracts: registryRetries must be an integer >= 0, got ${registryRetries}`);
  }
  if (!Number.isInteger(registryTimeoutMs) || registryTimeoutMs <= 0) {
    throw new TypeError(`Contracts: registryTimeoutMs must be an integer > 0, got ${registryTimeoutMs}`);
  }
  return Object.freeze({
    registryUrl: registryUrl.replace(/\/+$/, ''),
    unknownSchemaIdTtlMs,
    registryRetries,
    registryTimeoutMs,
    nowMs,
  });
}

/** A mappersmith middleware that gives every registry request a timeout (the client sets none). */
type RegistryMiddleware = NonNullable<ConstructorParameters<typeof SchemaRegistry>[0]['middlewares']>[number];
function requestTimeout(timeoutMs: number): RegistryMiddleware {
  return () => ({ request: (request) => request.enhance({ timeout: timeoutMs }) });
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

function unknownSchemaId(schemaId: number, contract: ContractSchema, cause?: unknown): ContractsError {
  return new ContractsError(
    'SCHED_E_UNKNOWN_SCHEMA_ID',
    `${contract.subject}: the registry does not know schema id ${schemaId}`,
    { schemaId, subject: contract.subject, status: 404, cause },
  );
}

/**
 * Maps an error of the registry client. Only 409 (incompatible) and 422 (invalid schema) answers to
 * a registration are refusals. Everything else is "unavailable", which is retriable because it says
 * nothing about the schema or the record: 5xx, no answer at all (the client reports a network error
 * as status 400 with the socket error as message), auth failures, and any failed lookup other than
 * the 404 handled by the caller.
 */
function registryError(
  error: unknown,
  context: { subject: string; schemaId?: number; refusal: boolean },
): ContractsError {
  const status = statusOf(error);
  const message = (error as Error | null)?.message ?? String(error);
  const refused = context.refusal && (status === 409 || status === 422);
  return new ContractsError(
    refused ? 'SCHED_E_SCHEMA_REFUSED' : 'SCHED_E_REGISTRY_UNAVAILABLE',
    `${context.subject}: ${message}`,
    {
      subject: context.subject,
      schemaId: context.schemaId,
      status,
      cause: error,
    },
  );
}
