import type { Logger } from '@sched/logging';
import type { KafkaPort } from './port.js';

/**
 * The group session timeout to ask for: the configured one, moved into the range the broker accepts
 * (a join outside it is refused), with a line saying so when it had to move. No range known: as
 * configured.
 */
export function sessionTimeoutWithin(
  configuredMs: number,
  range: { minMs: number; maxMs: number } | undefined,
  setting: string,
): { ms: number; note?: string } {
  if (range === undefined) return { ms: configuredMs };
  if (configuredMs < range.minMs)
    return {
      ms: range.minMs,
      note:
        `${setting} is below the broker's group.min.session.timeout.ms: ` +
        `using ${range.minMs} ms, so a crashed member's partitions wait that long; lower the broker setting to fail over sooner`,
    };
  if (configuredMs > range.maxMs)
    return {
      ms: range.maxMs,
      note: `${setting} is above the broker's group.max.session.timeout.ms: using ${range.maxMs} ms`,
    };
  return { ms: configuredMs };
}

/**
 * The session a group member of `kafka` should ask for: `configuredMs` moved into the range the broker
 * reports (one admin round trip), with a warning naming `setting` when it had to move.
 */
export async function negotiatedSessionTimeout(
  kafka: KafkaPort,
  configuredMs: number,
  setting: string,
  log: Logger,
): Promise<number> {
  const admin = await kafka.admin();
  const range = await admin.sessionTimeoutRange().finally(() => admin.disconnect());
  const session = sessionTimeoutWithin(configuredMs, range, setting);
  if (session.note) log.warn({ configuredMs, ...range }, session.note);
  return session.ms;
}
