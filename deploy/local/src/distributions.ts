import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { StackError } from './errors.js';
import { tailFile } from './log-files.js';
import { logFile } from './processes.js';
import { PACKAGE_DIR, type Env, type StackSettings } from './settings.js';

/**
 * The Java distributions the stack runs, fetched through Maven from Maven Central with the
 * committed recipe `deploy/local/recipe/pom.xml`, unpacked once into the user's cache
 * (`${XDG_CACHE_HOME:-~/.cache}/sched-stack/<part>-<version>/`) and shared by every clone.
 * Maven's own cache (~/.m2) makes a second fetch a matter of seconds.
 */

export const RECIPE_POM = join(PACKAGE_DIR, 'recipe', 'pom.xml');
const DEPENDENCY_PLUGIN = 'org.apache.maven.plugins:maven-dependency-plugin:3.8.1';
const FETCH_TIMEOUT_MS = 30 * 60_000;

export interface RecipeVersions {
  kafka: string;
  log4j: string;
  debezium: string;
  apicurio: string;
}

/** The versions pinned in the recipe pom (the only place they are written). */
export function recipeVersions(pomXml: string = readFileSync(RECIPE_POM, 'utf8')): RecipeVersions {
  const prop = (name: string): string => {
    const m = new RegExp(`<${name.replace('.', '\\.')}>([^<]+)</${name.replace('.', '\\.')}>`).exec(pomXml);
    if (!m?.[1]) throw new Error(`recipe pom has no <${name}>`);
    return m[1].trim();
  };
  return {
    kafka: prop('kafka.version'),
    log4j: prop('log4j.version'),
    debezium: prop('debezium.version'),
    apicurio: prop('apicurio.version'),
  };
}

export interface Distributions {
  versions: RecipeVersions;
  /** Broker + Connect jars (one classpath: `<dir>/*`). */
  kafkaLibDir: string;
  /** Connect `plugin.path`: holds `debezium-connector-postgres/`. */
  debeziumPluginPath: string;
  /** Unpacked Apicurio Registry: holds `quarkus-run.jar`. */
  apicurioDir: string;
}

type Part = 'kafka' | 'debezium' | 'apicurio';

export function distributionDirs(
  settings: StackSettings,
  pomXml: string = readFileSync(RECIPE_POM, 'utf8'),
): Distributions & { parts: Record<Part, string> } {
  const v = recipeVersions(pomXml);
  // The jar set depends on the whole dependency list, not only on the Kafka version.
  const deps = /<dependencies>[\s\S]*?<\/dependencies>/.exec(pomXml)?.[0] ?? '';
  const depsHash = createHash('sha256').update(deps).update(v.log4j).digest('hex').slice(0, 8);
  const parts: Record<Part, string> = {
    kafka: join(settings.cacheDir, `kafka-${v.kafka}-${depsHash}`),
    debezium: join(settings.cacheDir, `debezium-connector-postgres-${v.debezium}`),
    apicurio: join(settings.cacheDir, `apicurio-registry-${v.apicurio}`),
  };
  return {
    versions: v,
    kafkaLibDir: join(parts.kafka, 'lib'),
    debeziumPluginPath: parts.debezium,
    apicurioDir: parts.apicurio,
    parts,
  };
}

const COMPLETE = '.complete';

/** What each part's directory must hold once unpacked (checked before it counts as cached). */
const SENTINEL: Record<Part, (v: RecipeVersions) => string> = {
  kafka: (v) => join('lib', `kafka_2.13-${v.kafka}.jar`),
  debezium: (v) => join('debezium-connector-postgres', `debezium-connector-postgres-${v.debezium}.jar`),
  apicurio: () => 'quarkus-run.jar',
};

/**
 * Makes sure every part is unpacked in the cache, fetching the missing ones in one Maven run.
 * Fails with SCHED_E_STACK_NO_MAVEN or SCHED_E_STACK_FETCH_FAILED (with Maven's last lines).
 */
export async function ensureDistributions(
  settings: StackSettings,
  env: Env,
  javaForMaven: string,
  say: (line: string) => void,
): Promise<Distributions> {
  const dirs = distributionDirs(settings);
  const missing = (Object.keys(dirs.parts) as Part[]).filter(
    (p) =>
      !existsSync(join(dirs.parts[p], COMPLETE)) ||
      !existsSync(join(dirs.parts[p], SENTINEL[p](dirs.versions))),
  );
  if (missing.length === 0) return dirs;

  const mvn = findOnPath(env, 'mvn');
  if (!mvn) {
    throw new StackError(
      'SCHED_E_STACK_NO_MAVEN',
      `Maven (mvn) is needed once to fetch ${missing.join(', ')} from Maven Central, and it is not on PATH`,
      'install Maven 3.8+ (e.g. apt-get install maven, or https://maven.apache.org/download.cgi) and run again',
    );
  }
  mkdirSync(settings.cacheDir, { recursive: true });
  mkdirSync(join(settings.stateDir, 'logs'), { recursive: true });
  const staging = join(settings.cacheDir, `.staging-${process.pid}-${Date.now()}`);
  const log = logFile(settings.stateDir, 'maven');
  say(`fetching ${missing.join(', ')} through Maven (first time from Maven Central: ~250 MB; log: ${log})`);
  const goals = missing.map(
    (p) => `${DEPENDENCY_PLUGIN}:${p === 'kafka' ? 'copy-dependencies' : 'unpack'}@${p}`,
  );
  const args = ['-B', '-Dstyle.color=never', '-f', RECIPE_POM, `-Dstack.out=${staging}`, ...goals];
  try {
    const code = await runLogged(
      mvn,
      args,
      log,
      { ...env, JAVA_HOME: env.JAVA_HOME ?? dirname(dirname(javaForMaven)) },
      say,
    );
    if (code !== 0) {
      throw new StackError(
        'SCHED_E_STACK_FETCH_FAILED',
        `Maven could not fetch ${missing.join(', ')} (exit ${code}). From ${log}:\n${mavenTail(log)}`,
        'check that Maven reaches https://repo.maven.apache.org/maven2 (network, proxy or mirror in ~/.m2/settings.xml), then run `npm run stack -- up` again',
        true,
      );
    }
    for (const p of missing) {
      const from = join(staging, p);
      if (!existsSync(join(from, SENTINEL[p](dirs.versions)))) {
        throw new StackError(
          'SCHED_E_STACK_FETCH_FAILED',
          `Maven finished but ${SENTINEL[p](dirs.versions)} is missing from the ${p} download (see ${log})`,
          `delete ${settings.cacheDir} and run again; if it persists, the recipe ${RECIPE_POM} is wrong`,
        );
      }
      writeFileSync(join(from, COMPLETE), `${new Date().toISOString()}\n`);
      rmSync(dirs.parts[p], { recursive: true, force: true });
      try {
        renameSync(from, dirs.parts[p]);
      } catch (err) {
        // Another `up` (another clone) finished the same part first: theirs is as good as ours.
        if (!existsSync(join(dirs.parts[p], COMPLETE))) throw err;
      }
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return dirs;
}

function runLogged(
  command: string,
  args: string[],
  log: string,
  env: Env,
  say: (line: string) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const fd = openSync(log, 'a');
    writeFileSync(fd, `\n===== ${new Date().toISOString()} ${command} ${args.join(' ')}\n`);
    const child = spawn(command, args, { env: env as NodeJS.ProcessEnv, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    const started = Date.now();
    const progress = setInterval(
      () => say(`  still fetching after ${Math.round((Date.now() - started) / 1000)} s…`),
      30_000,
    );
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, FETCH_TIMEOUT_MS);
    const done = (): void => {
      clearInterval(progress);
      clearTimeout(timer);
    };
    child.once('error', (err) => {
      done();
      reject(err);
    });
    child.once('exit', (code, signal) => {
      done();
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

/** The informative end of a Maven log: colour codes and Maven's generic advice removed. */
export function mavenTail(log: string): string {
  const boiler =
    /Re-run Maven|For more information about the errors|^\[ERROR\] \[Help \d+\]|To see the full stack trace|^\[ERROR\]\s*$|^\[INFO\] -+$/;
  return tailFile(log, 40)
    .replace(/\x1b\[[0-9;]*m/g, '')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('=====') && !boiler.test(l))
    .slice(-8)
    .join('\n');
}

/** Absolute path of `name` on PATH, or undefined. */
export function findOnPath(env: Env, name: string): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}
