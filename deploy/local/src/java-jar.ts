import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A jar compiled from Java sources of ours, kept in the stack's cache under a digest of its inputs. */
export interface JarRecipe {
  /** Folder name in the cache, before the digest. */
  name: string;
  /** File name of the jar. */
  jar: string;
  sources: string[];
  /** `javac -cp` (a folder of jars as `dir/*`), if the sources need one. */
  classpath?: string;
  /** Extra words for the digest (what the classpath is: a library version). */
  digestOf?: string;
  /** MANIFEST.MF lines. */
  manifest?: string;
  /** Files to put in the jar besides the classes: path inside the jar → content. */
  resources?: Record<string, string>;
}

/** Why a jar could not be built: no javac/jar next to `java` (a JRE), or the build failed. */
export class JarBuildError extends Error {}

/**
 * The path of the recipe's jar, built with the JDK of `java` if it is not in the cache yet.
 * Several stacks share the cache: each builds in a folder of its own and moves the jar into place
 * with one rename (atomic; a jar already there is as good as ours), never deleting one.
 */
export function cachedJar(cacheDir: string, java: string, r: JarRecipe): { path: string; built: boolean } {
  const digest = createHash('sha256');
  for (const s of r.sources) digest.update(readFileSync(s));
  digest.update(
    `${r.classpath ?? ''}\n${r.digestOf ?? ''}\n${r.manifest ?? ''}\n${JSON.stringify(r.resources ?? {})}`,
  );
  const dir = join(cacheDir, `${r.name}-${digest.digest('hex').slice(0, 12)}`);
  const jarPath = join(dir, r.jar);
  if (existsSync(jarPath)) return { path: jarPath, built: false };

  const bin = dirname(java);
  const javac = join(bin, 'javac');
  const jarTool = join(bin, 'jar');
  if (!existsSync(javac) || !existsSync(jarTool))
    throw new JarBuildError(`no javac/jar next to ${java} (a JRE?)`);
  const work = `${dir}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  const classes = join(work, 'classes');
  mkdirSync(classes, { recursive: true });
  for (const [path, content] of Object.entries(r.resources ?? {})) {
    mkdirSync(dirname(join(classes, path)), { recursive: true });
    writeFileSync(join(classes, path), content);
  }
  const run = (cmd: string, args: string[]): void => {
    const p = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000 });
    if (p.status !== 0) {
      throw new JarBuildError(
        `${cmd} ${args.join(' ')} failed: ${(p.stderr || p.stdout || String(p.error)).trim()}`,
      );
    }
  };
  try {
    run(javac, [
      '--release',
      '17',
      ...(r.classpath ? ['-cp', r.classpath] : []),
      '-d',
      classes,
      ...r.sources,
    ]);
    const manifest = r.manifest ? ['--manifest', join(work, 'MANIFEST.MF')] : [];
    if (r.manifest) writeFileSync(join(work, 'MANIFEST.MF'), r.manifest);
    run(jarTool, ['--create', '--file', join(work, r.jar), ...manifest, '-C', classes, '.']);
    mkdirSync(dir, { recursive: true });
    renameSync(join(work, r.jar), jarPath);
  } catch (err) {
    if (existsSync(jarPath)) return { path: jarPath, built: false };
    throw err;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return { path: jarPath, built: true };
}
