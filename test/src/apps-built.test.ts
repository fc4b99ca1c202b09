import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../scripts/build-apps.js';
import { startApp, type SchedulerProcess } from './support/app-process.js';
import { createJob, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// The apps as `npm run build` makes them, started with plain Node (no tsx): the bundled scheduler
// runs its migrations from the store's files, the bundled worker runs a plain JavaScript handler
// module, a job goes through both; the bundled API serves its OpenAPI document.

describe('the built apps under plain Node', () => {
  let s: Scenario;
  let dir: string;
  const started: SchedulerProcess[] = [];

  beforeAll(async () => {
    for (const app of ['scheduler', 'worker', 'api']) await buildApp(app);
    s = await Scenario.create('built', 2);
    dir = mkdtempSync(join(tmpdir(), 'sched-handlers-'));
  });
  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('scheduler and worker from dist/ run a job; a PermanentFailure from the handler dead-letters at once', async () => {
    const handlers = join(dir, 'handlers.mjs');
    writeFileSync(
      handlers,
      `export function register(worker, { env }) {
         worker.handle(env.TEST_QUEUE, async (job) => {
           const spec = JSON.parse(job.payload.toString());
           if (spec.permanent) {
             const err = new Error('no such customer');
             err.name = 'PermanentFailure';
             err.failureClass = 'PERMANENT';
             throw err;
           }
         });
       }\n`,
    );
    const common = { SCHED_DB_SCHEMA: s.db.schema, SCHED_COMMANDS_TOPIC: s.commandsTopic };
    started.push(
      await startApp(
        'scheduler',
        {
          ...common,
          SCHED_GROUP_ID: s.groupId,
          SCHED_REJECTED_TOPIC: s.rejectedTopic,
          SCHED_OWNER_ID: 'built-owner',
        },
        60_000,
        { built: true },
      ),
    );
    started.push(
      await startApp(
        'worker',
        {
          ...common,
          SCHED_WORKER_GROUP_ID: `${s.db.schema}-workers`,
          SCHED_WORKER_ID: 'built-worker',
          SCHED_WORKER_HANDLERS: handlers,
          TEST_QUEUE: s.queue,
        },
        60_000,
        { built: true },
      ),
    );
    const due = Date.now() + 1_000;
    await s.producer.send([
      createJob('built-ok', s.queue, due, { payload: Buffer.from('{}') }),
      createJob('built-permanent', s.queue, due, {
        payload: Buffer.from('{"permanent":true}'),
        maxAttempts: 5,
      }),
    ]);
    await until('both finished', 60_000, async () => {
      const states = await s.jobStates();
      return states.get('built-ok') === 'SUCCEEDED' && states.get('built-permanent') === 'DEAD';
    }).catch(async (err: unknown) => {
      const states = JSON.stringify([...(await s.jobStates())]);
      throw new Error(
        `${String(err)}; states ${states}\n${started.map((p) => p.output().slice(-2000)).join('\n---\n')}`,
      );
    });
    const { rows } = await s.db.pool.query<{ attempt: number }>(
      "SELECT attempt FROM job WHERE job_id = 'built-permanent'",
    );
    // One attempt: the handler module's own PermanentFailure is known by its field and name.
    expect(rows[0]!.attempt).toBe(1);
  });

  it('the API from dist/ serves its OpenAPI document', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const api = await startApp(
      'api',
      {
        SCHED_DB_SCHEMA: s.db.schema,
        SCHED_COMMANDS_TOPIC: s.commandsTopic,
        SCHED_API_PORT: String(port),
        SCHED_API_KEYS: 'built-key=ops:default:',
      },
      60_000,
      { built: true },
    );
    started.push(api);
    const res = await fetch(`http://127.0.0.1:${port}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/v1/jobs');
  });
});
