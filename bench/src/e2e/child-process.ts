import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APP_NODE_FLAGS } from '@sched/config';
import { isStartsMessage } from './workers/report-starts.js';

/** The repository root: every app is started from there, as `npm run …` would. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Absolute path of a file in this folder (worker entry points, handler modules). */
export const e2ePath = (rel: string): string => fileURLToPath(new URL(rel, import.meta.url));

export interface Child {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** The JSON printed after the ready marker. */
  readonly ready: Record<string, unknown>;
  /** The last ~16 KB the process printed, for failure messages. */
  tail(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves on exit. */
  stop(graceMs?: number): Promise<void>;
  /** kill -9, resolves on exit. */
  kill9(): Promise<void>;
  readonly exited: Promise<number | null>;
}

export type StartsSink = (quads: number[]) => void;

/** Every process this bench started and that still runs: stopped by pid if the bench exits early. */
const started = new Set<ChildProcess>();

/** SIGKILLs, by pid, the processes this bench started that still run (exit or interrupt). */
export function killStartedProcesses(): void {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  started.clear();
}

/** Registers a process the bench started (redis-server) for `killStartedProcesses`. */
export function trackStarted(c: ChildProcess): void {
  started.add(c);
  c.on('exit', () => started.delete(c));
}

/**
 * Starts `node --import tsx <entry>` from the repository root with an IPC channel, waits for
 * `<marker> {json}` on stdout, and forwards handler-start reports to `onStarts`.
 */
export async function startChild(opts: {
  name: string;
  entry: string;
  env: Record<string, string>;
  marker: string;
  onStarts: StartsSink;
  readyTimeoutMs?: number;
  /** Extra node flags (before `--import tsx`). */
  nodeFlags?: string[];
}): Promise<Child> {
  // E2E_PROFILE_DIR=<dir>: every started process writes a V8 CPU profile there when it exits.
  const prof = process.env.E2E_PROFILE_DIR;
  // Every system's processes (ours and the peers' workers) run with the same node flags.
  const flags = [
    ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
    ...APP_NODE_FLAGS,
    ...(opts.nodeFlags ?? []),
  ];
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', opts.entry], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  trackStarted(child);
  let out = '';
  // E2E_LOG_DIR=<dir>: every started process's whole output (warnings: slow claim rounds, stalls)
  // also goes to <dir>/<name>-<pid>.log.
  const logDir = process.env.E2E_LOG_DIR;
  if (logDir) mkdirSync(logDir, { recursive: true });
  const file = logDir ? createWriteStream(join(logDir, `${opts.name}-${child.pid}.log`)) : null;
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-16_384);
    file?.write(b);
  };
  child.on('exit', () => file?.end());
  child.stderr!.on('data', keep);
  child.on('message', (m) => {
    if (isStartsMessage(m)) opts.onStarts(m.d);
  });
  let stopping = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => {
      // A process that dies on its own ruins the workload: say so, with what it printed last.
      if (!stopping && found)
        console.error(`[e2e] ${opts.name} exited by itself (code ${code}, signal ${signal}):\n${out}`);
      resolve(code);
    }),
  );
  const marker = new RegExp(`${opts.marker} (\\{.*\\})`);
  let seen = '';
  let found = false;
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${opts.name} not ready in ${opts.readyTimeoutMs ?? 60_000} ms:\n${out}`)),
      opts.readyTimeoutMs ?? 60_000,
    );
    child.stdout!.on('data', (b: Buffer) => {
      keep(b);
      if (found) return;
      seen += b.toString();
      const m = marker.exec(seen);
      if (m) {
        found = true;
        clearTimeout(timer);
        resolve(JSON.parse(m[1]!) as Record<string, unknown>);
      }
      if (seen.length > 65_536) seen = seen.slice(-4096);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${opts.name} exited with ${code} before ready:\n${out}`));
    });
  });
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    name: opts.name,
    pid: child.pid!,
    child,
    ready,
    tail: () => out,
    exited,
    async stop(graceMs = 10_000) {
      stopping = true;
      if (gone()) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(t);
    },
    async kill9() {
      stopping = true;
      if (gone()) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}
