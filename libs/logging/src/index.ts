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

/**
 * A logger that keeps its last `keep` lines (JSON) in `lines` instead of writing them anywhere:
 * for test processes, whose clients' warnings are printed only when a test fails.
 */
export function recordingLogger(lines: string[], level = 'warn', keep = 200): Logger {
  return pino(
    { level, timestamp: pino.stdTimeFunctions.isoTime },
    {
      write(line: string) {
        lines.push(line.trimEnd());
        if (lines.length > keep) lines.splice(0, lines.length - keep);
      },
    },
  );
}

/**
 * Lets one line through per `everyMs` for each key and counts the rest, so a flood (bad input at
 * line rate, an overloaded loop) costs a counter increment per event instead of a synchronous
 * write: pino writes to stdout synchronously, and a pipe write is a system call. `take` returns
 * null to drop the line, or how many lines for that key were dropped since the last one let
 * through (to report with it).
 */
export class LogThrottle {
  private readonly last = new Map<string, { at: number; dropped: number }>();

  constructor(private readonly everyMs: number) {}

  take(key: string, nowMs: number = Date.now()): { dropped: number } | null {
    const s = this.last.get(key);
    if (s && nowMs - s.at < this.everyMs) {
      s.dropped++;
      return null;
    }
    const dropped = s?.dropped ?? 0;
    this.last.set(key, { at: nowMs, dropped: 0 });
    return { dropped };
  }
}

/**
 * Awaits one start-up step and, while it is still pending, warns every `everyMs` that the process
 * is waiting for it (a Kafka group join held by a dead member, a registry that does not answer, a
 * migration lock): a process that never becomes ready says where it is stuck.
 */
export async function startupStep<T>(
  log: Pick<Logger, 'warn'>,
  step: string,
  work: () => Promise<T>,
  everyMs = 10_000,
): Promise<T> {
  const started = Date.now();
  const timer = setInterval(
    () => log.warn({ step, waitedMs: Date.now() - started }, `start-up still waiting: ${step}`),
    everyMs,
  );
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
