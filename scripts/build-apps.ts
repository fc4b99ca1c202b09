/**
 * The apps as plain Node programs: `node apps/<app>/dist/main.js` (part of `npm run build`).
 *
 * Each app is bundled with the workspace libraries it uses (esbuild through tsup); third-party
 * packages stay imports, found in the repository's node_modules as the sources find them. The app
 * runs from its place in the repository (its image copies the repository): a library that finds a
 * file beside its source (the store's migrations, the Avro schemas) keeps finding it there, because
 * its `import.meta.url` is rewritten to its source file's place relative to the bundle.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export const APPS: Readonly<Record<string, readonly string[]>> = {
  scheduler: ['main'],
  worker: ['main', 'demo-handlers'],
  api: ['main'],
  cli: ['main'],
};

export async function buildApp(app: string): Promise<string> {
  const outDir = join(ROOT, 'apps', app, 'dist');
  const entries = APPS[app];
  if (!entries) throw new Error(`no app ${app}`);
  await build({
    entry: Object.fromEntries(entries.map((e) => [e, join(ROOT, 'apps', app, 'src', `${e}.ts`)])),
    outDir,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Entries of one app share one copy of each library (the worker's demo handlers throw the
    // same PermanentFailure class the worker classifies).
    splitting: true,
    sourcemap: true,
    clean: true,
    silent: true,
    dts: false,
    noExternal: [/^@sched\//],
    tsconfig: join(ROOT, 'tsconfig.json'),
    esbuildPlugins: [
      {
        // Third-party packages stay imports (tsup would bundle those the root manifest lacks).
        name: 'third-party-external',
        setup(b) {
          b.onResolve({ filter: /^[^./]/ }, (args) =>
            args.path.startsWith('@sched/') ? undefined : { path: args.path, external: true },
          );
        },
      },
      {
        name: 'source-relative-import-meta-url',
        setup(b) {
          b.onLoad({ filter: /[/\\](libs|schemas)[/\\].*\.ts$/ }, (args) => {
            const source = readFileSync(args.path, 'utf8');
            if (!source.includes('import.meta.url')) return undefined;
            const rel = relative(outDir, args.path).split('\\').join('/');
            return {
              contents: source.replaceAll(
                'import.meta.url',
                `new URL(${JSON.stringify(rel)}, import.meta.url).href`,
              ),
              loader: 'ts',
              resolveDir: dirname(args.path),
            };
          });
        },
      },
    ],
  });
  return outDir;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const only = process.argv.slice(2);
  for (const app of Object.keys(APPS).filter((a) => only.length === 0 || only.includes(a))) {
    const t0 = Date.now();
    const out = await buildApp(app);
    console.log(`apps/${app}: ${relative(ROOT, out)}/main.js in ${Date.now() - t0} ms`);
  }
}
