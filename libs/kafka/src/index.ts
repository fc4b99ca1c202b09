export type * from './port.js';
export { RecordTooLargeError } from './port.js';
export { kafkajsPort, kafkaErrorType } from './kafkajs-adapter.js';
export { recordBytesUpperBound, type ProduceLimits } from './record-packing.js';
export type { KafkajsOptions } from './kafkajs-adapter.js';
export { negotiatedSessionTimeout, sessionTimeoutWithin } from './session-timeout.js';

/** Reads a header as a UTF-8 string (Debezium's SimpleHeaderConverter writes text). */
export function headerString(value: Buffer | string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.toString('utf8');
}
