import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { sleep } from './wait.js';

/**
 * Processes the stack starts, one pid file each under `<stateDir>/pids/`. Every JVM is started
 * directly (no wrapper shell), so the recorded pid is the JVM's own, and it carries
 * `-Dsched.stack.service=<name> -Dsched.stack.dir=<stateDir>` so that a recycled pid is never
 * mistaken for ours.
 */

export const pidFile = (stateDir: string, name: string): string => join(stateDir, 'pids', `${name}.pid`);
export const logFile = (stateDir: string, name: string): string => join(stateDir, 'logs', `${name}.log`);

/** The marker arguments that identify a JVM as this stack's `name`. */
export function markerArgs(stateDir: string, name: string): string[] {
  return [`-Dsched.stack.service=${name}`, `-Dsched.stack.dir=${stateDir}`];
}

export interface SpawnSpec {
  name: string;
  stateDir: string;
  command: string;
  args: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts `command` detached from this process (it outlives the CLI), stdout and stderr appended
 * to `logs/<name>.log`, and records its pid. Returns the pid.
 */
export function spawnDetached(spec: SpawnSpec): number {
  mkdirSync(join(spec.stateDir, 'pids'), { recursive: true });
  const log = logFile(spec.stateDir, spec.name);
  rotateIfLarge(log);
  const fd = openSync(log, 'a');
  try {
    writeFileSync(
      fd,
      `\n===== ${new Date().toISOString()} starting ${spec.name}: ${spec.command} ${spec.args.join(' ')}\n`,
    );
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env ?? process.env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    if (child.pid === undefined) throw new Error(`could not start ${spec.command}`);
    child.unref();
    writeFileSync(pidFile(spec.stateDir, spec.name), `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** Keeps one previous log (`.1`) once a log passes 50 MB, so a long-lived state dir stays small. */
function rotateIfLarge(path: string): void {
  try {
    if (statSync(path).size > 50 * 1024 * 1024) renameSync(path, `${path}.1`);
  } catch {
    // no log yet
  }
}

export function readPid(stateDir: string, name: string): number | undefined {
  try {
    const n = Number(readFileSync(pidFile(stateDir, name), 'utf8').trim());
    return Number.isSafeInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

export function forgetPid(stateDir: string, name: string): void {
  rmSync(pidFile(stateDir, name), { force: true });
}

/** True if `pid` runs and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A dead child whose parent never reaps it (PID 1 in a bare container) still answers kill 0.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return existsSync('/proc') ? false : true;
  }
}

/** The command line of `pid`, or undefined when unknown. */
export function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return undefined;
  }
}

/**
 * The pid recorded for `name` if that process still runs and is ours (its command line carries
 * our marker), else undefined. A stale pid file is removed.
 */
export function ourPid(
  stateDir: string,
  name: string,
  marker: string = `-Dsched.stack.service=${name}`,
): number | undefined {
  const pid = readPid(stateDir, name);
  if (pid === undefined) return undefined;
  if (!isAlive(pid)) {
    forgetPid(stateDir, name);
    return undefined;
  }
  const cmd = commandLine(pid);
  // Without /proc (macOS) the marker cannot be read; trust the pid file.
  if (cmd !== undefined && !(cmd.includes(marker) && cmd.includes(stateDir))) {
    forgetPid(stateDir, name);
    return undefined;
  }
  return pid;
}

/**
 * SIGTERM, wait up to `graceMs` for the process to go, then SIGKILL and wait a little more.
 * Returns how it ended.
 */
export async function stopPid(pid: number, graceMs: number): Promise<'not running' | 'stopped' | 'killed'> {
  if (!isAlive(pid)) return 'not running';
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return 'not running';
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return 'stopped';
    await sleep(100);
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return 'stopped';
  }
  for (let i = 0; i < 50 && isAlive(pid); i++) await sleep(100);
  return 'killed';
}
