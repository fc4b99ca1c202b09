import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { StackError } from './errors.js';
import { PORT_ENV, type PortKey } from './settings.js';

/** True if nothing listens on 127.0.0.1:`port` (we could bind it ourselves). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/** `ss`'s lines for listeners on `port` (with their processes), or undefined when `ss` cannot tell. */
function listenersOn(port: number): string | undefined {
  try {
    return execFileSync('ss', ['-H', '-ltnp', `sport = :${port}`], {
      encoding: 'utf8',
      timeout: 3000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return undefined;
  }
}

/** What `ss -ltnp` says listens on `port` (process name and pid), when it can tell. */
export function portHolder(port: number): string | undefined {
  const out = listenersOn(port);
  if (out === undefined) return undefined;
  const users = [...out.matchAll(/users:\(\((.*?)\)\)/g)].map((m) => m[1]);
  if (users.length > 0) return users.join('; ');
  return out.trim() ? out.trim().split(/\s+/).slice(3, 4).join(' ') || undefined : undefined;
}

/**
 * True when `ss` shows a listener on `port`; false when it shows none; undefined when `ss` cannot
 * tell. A port can refuse a bind with nobody listening: our ports lie inside Linux's ephemeral range
 * (32768–60999), so a client connection elsewhere may have used the same number as its own end and
 * left it in TIME_WAIT for up to a minute.
 */
export function portHasListener(port: number): boolean | undefined {
  const out = listenersOn(port);
  return out === undefined ? undefined : out.trim().length > 0;
}

/** How `requireFreePort` looks at a port (replaceable in tests). */
export interface PortProbe {
  isFree(port: number): Promise<boolean>;
  hasListener(port: number): boolean | undefined;
  pauseMs: number;
}

/** How long a port held only by a connection's end (no listener) may take to free up. */
export const PORT_LINGER_WAIT_MS = 65_000;

/**
 * Fails with SCHED_E_STACK_PORT_IN_USE naming the port, its variable and its holder. A port that
 * refuses the bind while nobody listens on it (a TIME_WAIT end of some client connection) is waited
 * for, up to `PORT_LINGER_WAIT_MS`, instead of failing the start.
 */
export async function requireFreePort(
  key: PortKey,
  port: number,
  service: string,
  waitMs: number = PORT_LINGER_WAIT_MS,
  probe: PortProbe = { isFree: portIsFree, hasListener: portHasListener, pauseMs: 1_000 },
): Promise<void> {
  if (await probe.isFree(port)) return;
  const deadline = Date.now() + waitMs;
  while (probe.hasListener(port) === false && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, probe.pauseMs));
    if (await probe.isFree(port)) return;
  }
  const holder = portHolder(port);
  throw new StackError(
    'SCHED_E_STACK_PORT_IN_USE',
    `port ${port} (${service}) on 127.0.0.1 is already in use${holder ? ` by ${holder}` : ''}`,
    `stop whatever holds port ${port}, or choose another port: ${PORT_ENV[key]}=<free port> npm run stack -- up`,
  );
}
