import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { StackError } from './errors.js';
import type { Env } from './settings.js';

export interface JavaRuntime {
  /** Path of the `java` executable. */
  java: string;
  major: number;
}

const probed = new Map<string, number | undefined>();

/** Major version of a `java` executable (17, 21, 25…), or undefined if it does not run. */
export function javaMajor(java: string): number | undefined {
  if (probed.has(java)) return probed.get(java);
  let major: number | undefined;
  // A JDK's `release` file is cheaper to read than starting a JVM.
  const release = join(dirname(dirname(java)), 'release');
  try {
    const m = /JAVA_VERSION="(\d+)(?:\.(\d+))?/.exec(readFileSync(release, 'utf8'));
    if (m) major = m[1] === '1' ? Number(m[2]) : Number(m[1]);
  } catch {
    try {
      const out = execFileSync(java, ['-version'], {
        encoding: 'utf8',
        timeout: 10_000,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      major = parseVersionBanner(out);
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr;
      major = typeof stderr === 'string' ? parseVersionBanner(stderr) : undefined;
    }
  }
  probed.set(java, major);
  return major;
}

/** `openjdk version "17.0.15"` → 17; `java version "1.8.0_392"` → 8. */
export function parseVersionBanner(text: string): number | undefined {
  const m = /version "(\d+)(?:\.(\d+))?/.exec(text);
  if (!m) return undefined;
  return m[1] === '1' ? Number(m[2]) : Number(m[1]);
}

/** Candidate `java` executables, most specific first. */
function candidates(env: Env, explicitHome: string | undefined): string[] {
  const out: string[] = [];
  const add = (p: string | undefined): void => {
    if (p && existsSync(p)) {
      const real = safeRealpath(p);
      if (!out.includes(real)) out.push(real);
    }
  };
  if (explicitHome) add(join(explicitHome, 'bin', 'java'));
  if (env.JAVA_HOME) add(join(env.JAVA_HOME, 'bin', 'java'));
  for (const dir of (env.PATH ?? '').split(delimiter)) if (dir) add(join(dir, 'java'));
  for (const root of [
    '/usr/lib/jvm',
    '/usr/java',
    '/opt/java',
    '/opt',
    '/Library/Java/JavaVirtualMachines',
  ]) {
    let entries: string[] = [];
    try {
      entries = readdirSync(root);
    } catch {
      continue;
    }
    for (const e of entries.sort().reverse()) {
      add(join(root, e, 'bin', 'java'));
      add(join(root, e, 'Contents', 'Home', 'bin', 'java'));
    }
  }
  return out;
}

function safeRealpath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/**
 * The first Java at least `minMajor`: the explicit home (SCHED_JAVA_HOME / SCHED_REGISTRY_JAVA_HOME),
 * then JAVA_HOME, PATH, and the usual JDK folders. Fails with SCHED_E_STACK_NO_JAVA saying what
 * was found and how to fix it.
 */
export function findJava(
  env: Env,
  minMajor: number,
  purpose: string,
  explicitHome: string | undefined,
  homeVar: string,
): JavaRuntime {
  const seen: string[] = [];
  for (const java of candidates(env, explicitHome)) {
    const major = javaMajor(java);
    if (major !== undefined && major >= minMajor) return { java, major };
    seen.push(`${java} (${major ?? 'unknown version'})`);
  }
  throw new StackError(
    'SCHED_E_STACK_NO_JAVA',
    `Java ${minMajor} or newer is needed for ${purpose}; ${seen.length ? `found only ${seen.join(', ')}` : 'no java was found'}`,
    `install a JDK ${minMajor}+ (e.g. apt-get install temurin-${Math.max(minMajor, 21)}-jdk, or https://adoptium.net), ` +
      `then set ${homeVar}=<its home> or JAVA_HOME, or put its bin/ on PATH`,
  );
}
