/**
 * A pg-boss worker process for the e2e bench: `E2E_PGBOSS_LOOPS` calls of `boss.work(queue,
 * { pollingIntervalSeconds, batchSize })` (pg-boss 10 removed teamSize: more fetch loops means
 * more `work()` calls). The handler reports each job's start and returns; pg-boss completes the
 * batch. Prints `PGBOSS_WORKER_READY {}` once polling.
 */
import PgBoss from 'pg-boss';
import { decodeJobRef, reportStart } from './report-starts.js';

const env = process.env;
const need = (name: string): string => {
  const v = env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

async function main(): Promise<void> {
  const queue = need('E2E_QUEUE');
  const loops = Number(need('E2E_PGBOSS_LOOPS'));
  const batchSize = Number(need('E2E_PGBOSS_BATCH'));
  const pollingIntervalSeconds = Number(need('E2E_PGBOSS_POLL_S'));
  const boss = new PgBoss({
    connectionString: need('E2E_PGBOSS_URL'),
    schema: need('E2E_PGBOSS_SCHEMA'),
    max: loops + 4,
    // The bench process runs maintenance; this process only works.
    supervise: false,
    schedule: false,
    migrate: false,
  });
  boss.on('error', (err: Error) => process.stderr.write(`pg-boss error: ${err.message}\n`));
  await boss.start();
  for (let k = 0; k < loops; k++) {
    await boss.work<unknown>(queue, { pollingIntervalSeconds, batchSize }, async (jobs) => {
      const startMs = Date.now();
      for (const job of jobs) {
        const ref = job.data as { r: number; i: number } | string;
        const { r, i } = typeof ref === 'string' ? decodeJobRef(ref) : ref;
        reportStart(r, i, startMs);
      }
    });
  }
  process.stdout.write('PGBOSS_WORKER_READY {}\n');
  const stop = () => void boss.stop({ graceful: false, wait: false }).finally(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`pg-boss worker failed: ${String(err)}\n`);
  process.exit(1);
});
