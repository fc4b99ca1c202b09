import { ContractsError } from './contracts-error';

/**
 * Confluent wire format: `0x00` magic byte, the schema id as a 4-byte big-endian signed int, then
 * the Avro binary body. Same framing as Confluent's serializers and `@kafkajs/confluent-schema-registry`.
 */
export const MAGIC_BYTE = 0;
export const HEADER_BYTES = 5;

/** The schema id of a framed record. Throws SCHED_E_UNDECODABLE when `bytes` is not framed. O(1). */
export function readSchemaId(bytes: Buffer | null | undefined): number {
  if (!Buffer.isBuffer(bytes)) {
    throw new ContractsError('SCHED_E_UNDECODABLE', 'record value is empty (null or not a buffer)');
  }
  if (bytes.length < HEADER_BYTES) {
    throw new ContractsError(
      'SCHED_E_UNDECODABLE',
      `record of ${bytes.length} bytes is shorter than the 5-byte Confluent header`,
    );
  }
  if (bytes[0] !== MAGIC_BYTE) {
    throw new ContractsError(
      'SCHED_E_UNDECODABLE',
      `magic byte is ${bytes[0]}, expected ${MAGIC_BYTE}: not Confluent-framed Avro`,
    );
  }
  return bytes.readInt32BE(1);
}

/** Writes the 5-byte header at the start of `target`. */
export function writeHeader(target: Buffer, schemaId: number): void {
  target[0] = MAGIC_BYTE;
  target.writeInt32BE(schemaId, 1);
}
