import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PACKAGE_DIR, type StackSettings } from './settings.js';

/**
 * The Java agent that ends Debezium's idle poll spin (see `java/PollTimerAgent.java`): compiled
 * once per source version with the JDK that runs Connect, kept in the stack's cache.
 */
export const POLL_TIMER_AGENT_SOURCE = join(PACKAGE_DIR, 'java', 'PollTimerAgent.java');

/** What Connect's log says when the agent patched the timer (the stack's tests look for it). */
export const POLL_TIMER_PATCHED_LINE = '[poll-timer-agent] patched io/debezium/util/Threads$2.expired()';

/**
 * Path of the agent jar, built if missing. Undefined (with a line saying why) when it is turned
 * off or `javac`/`jar` are not next to `java` (a JRE): Connect then runs without it, as Debezium
 * ships, spinning ~18 % of a core while idle.
 */
export function pollTimerAgentJar(
  s: Pick<StackSettings, 'cacheDir' | 'connectPollTimerFix'>,
  java: string,
  say: (line: string) => void,
): string | undefined {
  if (!s.connectPollTimerFix) {
    say('connect: poll-timer agent off (SCHED_CONNECT_POLL_TIMER_FIX=false)');
    return undefined;
  }
  const source = readFileSync(POLL_TIMER_AGENT_SOURCE);
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 12);
  const dir = join(s.cacheDir, `poll-timer-agent-${digest}`);
  const jarPath = join(dir, 'poll-timer-agent.jar');
  if (existsSync(jarPath)) return jarPath;

  const bin = dirname(java);
  const javac = join(bin, 'javac');
  const jarTool = join(bin, 'jar');
  if (!existsSync(javac) || !existsSync(jarTool)) {
    say(`connect: no javac/jar next to ${java} (a JRE?): starting without the poll-timer agent`);
    return undefined;
  }
  // Several stacks share the cache: build in a directory of our own, then move the jar into
  // place with one rename (atomic; a jar already there is as good as ours), never deleting one.
  const work = `${dir}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'classes'), { recursive: true });
  writeFileSync(join(work, 'MANIFEST.MF'), 'Premain-Class: PollTimerAgent\n');
  const run = (cmd: string, args: string[]): void => {
    const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) {
      throw new Error(`${cmd} ${args.join(' ')} failed: ${(r.stderr || r.stdout || String(r.error)).trim()}`);
    }
  };
  try {
    run(javac, ['--release', '17', '-d', join(work, 'classes'), POLL_TIMER_AGENT_SOURCE]);
    run(jarTool, [
      '--create',
      '--file',
      join(work, 'poll-timer-agent.jar'),
      '--manifest',
      join(work, 'MANIFEST.MF'),
      '-C',
      join(work, 'classes'),
      '.',
    ]);
    mkdirSync(dir, { recursive: true });
    renameSync(join(work, 'poll-timer-agent.jar'), jarPath);
  } catch (err) {
    if (existsSync(jarPath)) return jarPath;
    say(`connect: could not build the poll-timer agent, starting without it: ${(err as Error).message}`);
    return undefined;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  say(`connect: built the poll-timer agent (${jarPath})`);
  return jarPath;
}
