import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage, emitDeclarations, PUBLISHED } from '../../scripts/build-packages.js';
import { endpoints, uniqueName } from './support/isolation.js';
import { runToExit } from './support/run-process.js';
import { Scenario } from './support/scenario.js';

// The published packages as a user gets them: built, packed with `npm pack`, installed from the
// tarballs into an empty project outside the workspace, typechecked against their .d.ts, and run
// end to end from that project's own code (plain Node, no tsx): the client creates a job, a worker
// built on the installed SDK runs it.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const USER_CODE = `
import { CommandRefusedError, SchedulerClient } from '@sched/client';
import { createWorker } from '@sched/worker-sdk';

const env = JSON.parse(process.env.USER_ENV);
const ran = [];
const running = await createWorker(
  { brokers: env.brokers, registryUrl: env.registryUrl, databaseUrl: env.databaseUrl, schema: env.schema },
  { groupId: env.groupId, commandsTopic: env.commandsTopic, workerId: 'user-worker' },
);
running.handle(env.queue, async (job) => {
  ran.push({ jobId: job.jobId, payload: JSON.parse(job.payload.toString()), atMs: Date.now() });
});
await running.start();

const client = await SchedulerClient.connect({
  brokers: env.brokers,
  registryUrl: env.registryUrl,
  tenantId: 'default',
  callerId: 'user-project',
  commandsTopic: env.commandsTopic,
});
let refused = null;
try {
  await client.createJob({ queue: env.queue, dueAt: Math.floor(Date.now() / 1000) });
} catch (err) {
  refused = err instanceof CommandRefusedError ? err.reason : String(err);
}
const due = Date.now() + 1000;
const { jobId } = await client.createJob({ queue: env.queue, dueAt: due, payload: { hello: 'world' } });
const t0 = Date.now();
while (!ran.some((r) => r.jobId === jobId) && Date.now() - t0 < 60000) await new Promise((r) => setTimeout(r, 50));
await client.close();
await running.close();
console.log('RESULT ' + JSON.stringify({ jobId, due, ran, refused }));
process.exit(0);
`;

const USER_TYPES = `
import { SchedulerClient, type JobSpec } from '@sched/client';
import { createWorker, PermanentFailure, type Job } from '@sched/worker-sdk';
import { RejectionReason, type Dispatch } from '@sched/contracts';

export async function typed(): Promise<void> {
  const client = await SchedulerClient.connect({ brokers: [], registryUrl: '', tenantId: 't' });
  const spec: JobSpec = { queue: 'q', dueAt: new Date(), priority: 5 };
  const receipt: { commandId: string; jobId: string } = await client.createJob(spec);
  void receipt;
  const running = await createWorker({ brokers: [], registryUrl: '', databaseUrl: '' });
  running.handle('q', async (job: Job) => {
    if (job.attempt > 3) throw new PermanentFailure('enough');
  });
  const reason: string = RejectionReason.DUE_AT_OUT_OF_RANGE;
  const d: Dispatch | null = null;
  void reason;
  void d;
}
`;

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('the published packages, packed and installed outside the workspace', () => {
  let s: Scenario;
  let project: string;
  const tarballs: string[] = [];

  beforeAll(async () => {
    s = await Scenario.create('packages', 2);
    await s.startScheduler();
    project = mkdtempSync(join(tmpdir(), 'sched-user-'));
    const packs = join(project, 'packs');
    mkdirSync(packs);
    emitDeclarations();
    for (const p of PUBLISHED) {
      const dir = await buildPackage(p);
      const out = JSON.parse(run('npm', ['pack', dir, '--json', '--pack-destination', packs], ROOT)) as {
        filename: string;
      }[];
      tarballs.push(join(packs, out[0]!.filename));
    }
  });
  afterAll(async () => {
    await s?.close();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('each tarball holds the built code, its types, README and LICENSE, and no TypeScript source', () => {
    for (const t of tarballs) {
      const files = run('tar', ['-tzf', t], project).split('\n').filter(Boolean);
      expect(files, t).toEqual(
        expect.arrayContaining([
          'package/package.json',
          'package/lib/index.js',
          'package/lib/index.d.ts',
          'package/README.md',
          'package/LICENSE',
        ]),
      );
      expect(
        files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
        t,
      ).toEqual([]);
      const manifest = JSON.parse(run('tar', ['-xzOf', t, 'package/package.json'], project)) as {
        private?: boolean;
        exports: Record<string, unknown>;
        dependencies: Record<string, string>;
      };
      expect(manifest.private).toBeUndefined();
      expect(JSON.stringify(manifest.exports)).toContain('./lib/index.js');
      // Only published packages and third-party ones: nothing internal to the workspace.
      expect(
        Object.keys(manifest.dependencies).filter(
          (d) => d.startsWith('@sched/') && !PUBLISHED.some((p) => p.name === d),
        ),
      ).toEqual([]);
    }
  });

  it("installs from the tarballs, typechecks, and runs a job end to end from the project's own code", async () => {
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify(
        {
          name: 'user-service',
          private: true,
          type: 'module',
          dependencies: Object.fromEntries(PUBLISHED.map((p, i) => [p.name, `file:${tarballs[i]!}`])),
        },
        null,
        2,
      ),
    );
    const t0 = Date.now();
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], project);
    const installMs = Date.now() - t0;
    // Installed as packages, not links into the workspace.
    const installed = JSON.parse(
      readFileSync(join(project, 'node_modules/@sched/client/package.json'), 'utf8'),
    ) as { exports: unknown };
    expect(JSON.stringify(installed.exports)).toContain('./lib/index.js');

    writeFileSync(join(project, 'typed.ts'), USER_TYPES);
    // The README's TypeScript, as a user would paste it (its helpers declared).
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const snippets = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(snippets.length).toBeGreaterThanOrEqual(2);
    snippets.forEach((code, i) => writeFileSync(join(project, `readme-${i}.ts`), `${code}\nexport {};\n`));
    writeFileSync(
      join(project, 'readme-helpers.d.ts'),
      'declare function sendEmail(mail: unknown, options: { idempotencyKey: string }): Promise<void>;\n',
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['typed.ts', 'readme-helpers.d.ts', ...snippets.map((_, i) => `readme-${i}.ts`)],
      }),
    );
    run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], project);

    writeFileSync(join(project, 'main.mjs'), USER_CODE);
    const ep = endpoints();
    const userEnv = {
      brokers: ep.kafkaBrokers,
      registryUrl: ep.registryUrl,
      databaseUrl: ep.databaseUrl,
      schema: s.db.schema,
      queue: s.queue,
      commandsTopic: s.commandsTopic,
      groupId: uniqueName('user-workers'),
    };
    const done = await runToExit(process.execPath, ['main.mjs'], {
      cwd: project,
      env: { PATH: process.env.PATH, USER_ENV: JSON.stringify(userEnv), LOG_LEVEL: 'warn' },
    });
    if (done.status !== 0)
      throw new Error(
        `user project exited ${done.status}\n${done.stdout.slice(-3000)}\n${done.stderr.slice(-3000)}`,
      );
    const out = done.stdout;
    const line = out.split('\n').find((l) => l.startsWith('RESULT '));
    expect(line, out.slice(-3000)).toBeDefined();
    const result = JSON.parse(line!.slice('RESULT '.length)) as {
      jobId: string;
      due: number;
      ran: { jobId: string; payload: unknown; atMs: number }[];
      refused: string | null;
    };
    expect(result.refused).toBe('DUE_AT_OUT_OF_RANGE');
    const mine = result.ran.filter((r) => r.jobId === result.jobId);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.payload).toEqual({ hello: 'world' });
    expect(mine[0]!.atMs).toBeGreaterThanOrEqual(result.due);
    const { rows } = await s.db.pool.query<{ state: string }>('SELECT state FROM job WHERE job_id = $1', [
      result.jobId,
    ]);
    expect(rows[0]?.state).toBe('SUCCEEDED');
    console.log(
      `packages: 3 tarballs installed in ${installMs} ms outside the workspace; a job ran ${
        mine[0]!.atMs - result.due
      } ms after its due time from the project's own code`,
    );
  });
});
