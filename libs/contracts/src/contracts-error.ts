/**
 * Errors of this package. Each has a stable `code` and says whether retrying the same call can
 * help (`retriable`), so a consumer can decide between "route to sched.commands.rejected" and
 * "pause and retry".
 *
 * | code | retriable | when |
 * |---|---|---|
 * | SCHED_E_UNDECODABLE | no | not Confluent-framed (too short, magic byte ≠ 0) or the Avro body does not parse with its writer schema |
 * | SCHED_E_UNKNOWN_SCHEMA_ID | no | the registry answered 404 for the schema id in the frame |
 * | SCHED_E_INCOMPATIBLE_SCHEMA | no | the writer schema exists but cannot be read as this contract (another subject's record, a removed union branch, …) |
 * | SCHED_E_REGISTRY_UNAVAILABLE | yes | the registry could not be reached, answered 5xx, or refused the credentials; says nothing about the record |
 * | SCHED_E_SCHEMA_REFUSED | no | a schema cannot be registered: the registry found it incompatible with the subject (409) or invalid (422), or it does not even parse |
 * | SCHED_E_INVALID_MESSAGE | no | a value given to an encode method does not match the schema; `paths` lists the offending fields |
 * | SCHED_E_NOT_REGISTERED | no | encode called before registerAll() resolved: no schema id to frame with |
 */
export const CONTRACTS_ERROR_CODES = {
  SCHED_E_UNDECODABLE: { retriable: false },
  SCHED_E_UNKNOWN_SCHEMA_ID: { retriable: false },
  SCHED_E_INCOMPATIBLE_SCHEMA: { retriable: false },
  SCHED_E_REGISTRY_UNAVAILABLE: { retriable: true },
  SCHED_E_SCHEMA_REFUSED: { retriable: false },
  SCHED_E_INVALID_MESSAGE: { retriable: false },
  SCHED_E_NOT_REGISTERED: { retriable: false },
} as const satisfies Record<string, { retriable: boolean }>;

export type ContractsErrorCode = keyof typeof CONTRACTS_ERROR_CODES;

export interface ContractsErrorDetails {
  /** Schema id read from the frame or involved in the call. */
  readonly schemaId?: number;
  readonly subject?: string;
  /** For SCHED_E_INVALID_MESSAGE: each invalid field as a path, e.g. `['body', 'value', 'dueAtMs']`. */
  readonly paths?: readonly (readonly string[])[];
  /** HTTP status the registry answered, when there was an answer. */
  readonly status?: number;
  readonly cause?: unknown;
}

export class ContractsError extends Error {
  readonly code: ContractsErrorCode;
  readonly retriable: boolean;
  readonly schemaId: number | undefined;
  readonly subject: string | undefined;
  readonly paths: readonly (readonly string[])[] | undefined;
  readonly status: number | undefined;

  constructor(code: ContractsErrorCode, message: string, details: ContractsErrorDetails = {}) {
    super(`${code}: ${message}`, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'ContractsError';
    this.code = code;
    this.retriable = CONTRACTS_ERROR_CODES[code].retriable;
    this.schemaId = details.schemaId;
    this.subject = details.subject;
    this.paths = details.paths;
    this.status = details.status;
  }
}

/** True when `error` is a ContractsError, optionally with the given code. */
export function isContractsError(error: unknown, code?: ContractsErrorCode): error is ContractsError {
  return error instanceof ContractsError && (code === undefined || error.code === code);
}
