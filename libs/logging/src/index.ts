import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** pino level; default `info`. */
  level?: string;
  /** Extra bindings on every line (app, instance id, …). */
  bindings?: Record<string, unknown>;
}

/** Structured JSON logs on stdout, one logger per component; children add context. */
export function createLogger(component: string, options: LoggerOptions = {}): Logger {
  return pino({
    name: component,
    level: options.level ?? 'info',
    base: { pid: process.pid, ...options.bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}

/** A logger that drops everything (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
