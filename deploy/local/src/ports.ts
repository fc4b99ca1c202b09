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

/** What `ss -ltnp` says listens on `port` (process name and pid), when it can tell. */
export function portHolder(port: number): string | undefined {
  try {
    const out = execFileSync('ss', ['-H', '-ltnp', `sport = :${port}`], {
      encoding: 'utf8',
      timeout: 3000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const users = [...out.matchAll(/users:\(\((.*?)\)\)/g)].map((m) => m[1]);
    if (users.length > 0) return users.join('; ');
    return out.trim() ? out.trim().split(/\s+/).slice(3, 4).join(' ') || undefined : undefined;
  } catch {
    return undefined;
  }
}

/** Fails with SCHED_E_STACK_PORT_IN_USE naming the port, its variable and its holder. */
export async function requireFreePort(key: PortKey, port: number, service: string): Promise<void> {
  if (await portIsFree(port)) return;
  const holder = portHolder(port);
  throw new StackError(
    'SCHED_E_STACK_PORT_IN_USE',
    `port ${port} (${service}) on 127.0.0.1 is already in use${holder ? ` by ${holder}` : ''}`,
    `stop whatever holds port ${port}, or choose another port: ${PORT_ENV[key]}=<free port> npm run stack -- up`,
  );
}
