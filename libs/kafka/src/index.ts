export type * from './port.js';
export { kafkajsPort } from './kafkajs-adapter.js';
export type { KafkajsOptions } from './kafkajs-adapter.js';
export { negotiatedSessionTimeout, sessionTimeoutWithin } from './session-timeout.js';

/** Reads a header as a UTF-8 string (Debezium's SimpleHeaderConverter writes text). */
export function headerString(value: Buffer | string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.toString('utf8');
}
