import { join } from 'node:path';
import { cachedJar } from './java-jar.js';
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
  try {
    const { path, built } = cachedJar(s.cacheDir, java, {
      name: 'poll-timer-agent',
      jar: 'poll-timer-agent.jar',
      sources: [POLL_TIMER_AGENT_SOURCE],
      manifest: 'Premain-Class: PollTimerAgent\n',
    });
    if (built) say(`connect: built the poll-timer agent (${path})`);
    return path;
  } catch (err) {
    say(`connect: could not build the poll-timer agent, starting without it: ${(err as Error).message}`);
    return undefined;
  }
}
