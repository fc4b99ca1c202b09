import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pollTimerAgentJar } from './poll-timer-agent.js';
import { stackSettings } from './settings.js';

describe('the poll-timer agent build', () => {
  it('is on by default and turned off by SCHED_CONNECT_POLL_TIMER_FIX=false, saying so', () => {
    expect(stackSettings({}).connectPollTimerFix).toBe(true);
    const s = stackSettings({ SCHED_CONNECT_POLL_TIMER_FIX: 'false' });
    expect(s.connectPollTimerFix).toBe(false);
    const said: string[] = [];
    expect(pollTimerAgentJar(s, '/usr/bin/java', (l) => said.push(l))).toBeUndefined();
    expect(said.join('\n')).toMatch(/agent off \(SCHED_CONNECT_POLL_TIMER_FIX=false\)/);
    expect(() => stackSettings({ SCHED_CONNECT_POLL_TIMER_FIX: 'maybe' })).toThrow(
      /SCHED_CONNECT_POLL_TIMER_FIX="maybe" must be true or false/,
    );
  });

  it('starts Connect without it when the Java has no javac (a JRE), saying why', () => {
    const home = mkdtempSync(join(tmpdir(), 'jre-'));
    mkdirSync(join(home, 'bin'));
    writeFileSync(join(home, 'bin', 'java'), '');
    const said: string[] = [];
    const jar = pollTimerAgentJar(
      { cacheDir: join(home, 'cache'), connectPollTimerFix: true },
      join(home, 'bin', 'java'),
      (l) => said.push(l),
    );
    expect(jar).toBeUndefined();
    expect(said.join('\n')).toMatch(/no javac\/jar next to .*\(a JRE\?\)/);
  });
});
