/**
 * `npm run build`: the packages a user's service installs, built into `<package>/dist/`, each a
 * complete npm package (its own package.json, README, LICENSE) that `npm pack` / `npm publish`
 * take as it is.
 *
 * - `@sched/contracts`, `@sched/client` and `@sched/worker-sdk` are published; the internal
 *   workspace packages they use (`@sched/kafka`, `@sched/store`, …) are bundled into them, so the
 *   public surface is three packages (docs/adr/0004-published-packages.md).
 * - ESM JavaScript for Node 20 (esbuild, through tsup) and one bundled `.d.ts` each.
 * - The third-party packages the bundle imports become its `dependencies`, at the version range of
 *   the workspace's install; a type package the `.d.ts` needs (`@types/pg`) is added beside them.
 * - The Avro schemas the contracts read at start are copied next to the code.
 *
 * The workspace itself keeps running the TypeScript sources (`exports` → `src/`), so nothing here
 * is needed for `npm test` except by the test that installs these packages.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';
import { build } from 'tsup';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(join(ROOT, 'package.json'));

export interface PublishedPackage {
  name: string;
  dir: string;
  description: string;
}

export const PUBLISHED: readonly PublishedPackage[] = [
  {
    name: '@sched/contracts',
    dir: 'libs/contracts',
    description: 'Avro contracts of the Kafka-native job scheduler: commands, dispatches, events, rejections',
  },
  {
    name: '@sched/client',
    dir: 'libs/client',
    description:
      "Producer client of the Kafka-native job scheduler: job and schedule commands straight to Kafka, checked with the scheduler's rules",
  },
  {
    name: '@sched/worker-sdk',
    dir: 'libs/worker-sdk',
    description:
      'Worker SDK of the Kafka-native job scheduler: handlers for dispatched jobs, with leases, retries and fencing',
  },
];

const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

function installedVersion(pkg: string): string {
  const path = require.resolve(`${pkg}/package.json`, { paths: [ROOT] });
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
}

/** The package name of a bare import (`pg`, `@kafkajs/confluent-schema-registry`, `avsc/lib/x` → `avsc`). */
function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

function hasOwnTypes(pkg: string): boolean {
  const path = require.resolve(`${pkg}/package.json`, { paths: [ROOT] });
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as {
    types?: string;
    typings?: string;
    exports?: unknown;
  };
  return (
    Boolean(manifest.types ?? manifest.typings) || JSON.stringify(manifest.exports ?? '').includes('types')
  );
}

const BUILTINS = new Set(builtinModules);

/** Workspace package name → its directory (`@sched/kafka` → `libs/kafka`). */
function workspacePackages(): Map<string, string> {
  const dirs = new Map<string, string>();
  for (const group of ['libs', 'apps']) {
    for (const d of readdirSync(join(ROOT, group))) {
      const manifest = join(ROOT, group, d, 'package.json');
      if (existsSync(manifest))
        dirs.set((JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name, `${group}/${d}`);
    }
  }
  dirs.set('@sched/schemas', 'schemas');
  return dirs;
}

const TYPES_DIR = join(ROOT, 'build/types');

/** Declarations of every library, once per build (`tsc -p tsconfig.build.json`), for the bundler. */
export function emitDeclarations(): void {
  rmSync(TYPES_DIR, { recursive: true, force: true });
  execFileSync(
    join(ROOT, 'node_modules/.bin/tsc'),
    ['-p', 'tsconfig.build.json', '--declarationDir', TYPES_DIR],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
}

/** One `.d.ts` of the package's API: workspace declarations inlined, published packages imported. */
async function bundleDeclarations(p: PublishedPackage, outFile: string): Promise<void> {
  const dirs = workspacePackages();
  const bundle = await rollup({
    input: join(TYPES_DIR, p.dir, 'src/index.d.ts'),
    external: (id) => {
      const pkg = packageOf(id);
      return pkg !== null && (!pkg.startsWith('@sched/') || (pkg !== p.name && isPublished(pkg)));
    },
    plugins: [
      {
        name: 'workspace-declarations',
        resolveId(id) {
          const dir = dirs.get(id);
          if (dir === undefined || isPublished(id)) return null;
          return join(TYPES_DIR, dir, 'src/index.d.ts');
        },
      },
      dts({ respectExternal: true }),
    ],
    onwarn: (w, warn) => (w.code === 'CIRCULAR_DEPENDENCY' ? undefined : warn(w)),
  });
  await bundle.write({ file: outFile, format: 'es' });
  await bundle.close();
}

function isPublished(name: string): boolean {
  return PUBLISHED.some((x) => x.name === name);
}

export async function buildPackage(p: PublishedPackage): Promise<string> {
  const out = join(ROOT, p.dir, 'dist');
  rmSync(out, { recursive: true, force: true });
  const externals = new Set<string>();
  await build({
    entry: { index: join(ROOT, p.dir, 'src/index.ts') },
    outDir: join(out, 'lib'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    dts: false,
    sourcemap: true,
    splitting: false,
    clean: false,
    silent: true,
    tsconfig: join(ROOT, 'tsconfig.json'),
    esbuildPlugins: [
      {
        name: 'record-externals',
        setup(b) {
          b.onResolve({ filter: /^[^./]/ }, (args) => {
            const pkg = packageOf(args.path);
            if (pkg === null || BUILTINS.has(pkg)) return undefined;
            // Workspace packages are bundled, except the other published ones (a dependency).
            if (pkg.startsWith('@sched/') && (pkg === p.name || !isPublished(pkg))) return undefined;
            externals.add(pkg);
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  await bundleDeclarations(p, join(out, 'lib/index.d.ts'));
  const dependencies: Record<string, string> = {};
  for (const pkg of [...externals].sort())
    dependencies[pkg] = isPublished(pkg) ? root.version : `^${installedVersion(pkg)}`;
  // Types the declarations import: the package's own, or its @types package.
  const dts = readFileSync(join(out, 'lib/index.d.ts'), 'utf8');
  for (const m of dts.matchAll(/from ['"]([^'"]+)['"]/g)) {
    const pkg = packageOf(m[1]!);
    if (pkg === null || BUILTINS.has(pkg) || pkg === p.name) continue;
    if (isPublished(pkg)) {
      dependencies[pkg] = root.version;
      continue;
    }
    if (!(pkg in dependencies)) dependencies[pkg] = `^${installedVersion(pkg)}`;
    const typesPkg = `@types/${pkg.replace('@', '').replace('/', '__')}`;
    if (!hasOwnTypes(pkg) && existsSync(join(ROOT, 'node_modules', typesPkg)))
      dependencies[typesPkg] = `^${installedVersion(typesPkg)}`;
  }
  if (dts.includes('/// <reference types="node"') || /\bBuffer\b|NodeJS\./.test(dts))
    dependencies['@types/node'] = `^${installedVersion('@types/node')}`;
  // The contracts read their Avro schemas at start, relative to the code (`lib/..`).
  const code = readFileSync(join(out, 'lib/index.js'), 'utf8');
  if (code.includes('SCHEMAS_DIR')) {
    cpSync(join(ROOT, 'schemas/avro'), join(out, 'avro'), { recursive: true });
    if (existsSync(join(ROOT, 'schemas/released')))
      cpSync(join(ROOT, 'schemas/released'), join(out, 'released'), { recursive: true });
  }
  const readme = join(ROOT, p.dir, 'README.md');
  writeFileSync(
    join(out, 'README.md'),
    existsSync(readme)
      ? readFileSync(readme, 'utf8')
      : `# ${p.name}\n\n${p.description}.\n\nSee the project's README and docs/ for how to use it.\n`,
  );
  cpSync(join(ROOT, 'LICENSE'), join(out, 'LICENSE'));
  const manifest = {
    name: p.name,
    version: root.version,
    description: p.description,
    license: 'MIT',
    type: 'module',
    engines: { node: '>=20' },
    exports: { '.': { types: './lib/index.d.ts', import: './lib/index.js' } },
    types: './lib/index.d.ts',
    files: ['lib', 'avro', 'released', 'README.md', 'LICENSE'].filter((f) => existsSync(join(out, f))),
    dependencies,
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const only = process.argv.slice(2);
  emitDeclarations();
  for (const p of PUBLISHED.filter((x) => only.length === 0 || only.includes(x.name))) {
    const t0 = Date.now();
    const out = await buildPackage(p);
    const deps = Object.keys(
      (JSON.parse(readFileSync(join(out, 'package.json'), 'utf8')) as { dependencies: object }).dependencies,
    );
    console.log(
      `${p.name}: ${relative(ROOT, out)} in ${Date.now() - t0} ms (dependencies: ${deps.join(', ')})`,
    );
  }
}
