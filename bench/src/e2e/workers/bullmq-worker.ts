/**
 * A BullMQ worker process for the e2e bench: one `Worker` with `E2E_BULLMQ_CONCURRENCY`
 * concurrent jobs on the bench's own Redis. The processor reports the job's start and returns.
 * Completed jobs are removed (`removeOnComplete`), as BullMQ's guide recommends for production.
 * Prints `BULLMQ_WORKER_READY {}` once the worker is running.
 */
import { Worker } from 'bullmq';
import { reportStart } from './report-starts.js';

const env = process.env;
const need = (name: string): string => {
  const v = env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

async function main(): Promise<void> {
  const worker = new Worker<{ r: number; i: number }>(
    need('E2E_QUEUE'),
    async (job) => {
      reportStart(job.data.r, job.data.i, Date.now());
    },
    {
      connection: { host: '127.0.0.1', port: Number(need('E2E_REDIS_PORT')), maxRetriesPerRequest: null },
      concurrency: Number(need('E2E_BULLMQ_CONCURRENCY')),
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 1000 },
    },
  );
  worker.on('error', (err) => process.stderr.write(`bullmq worker error: ${err.message}\n`));
  await worker.waitUntilReady();
  process.stdout.write('BULLMQ_WORKER_READY {}\n');
  const stop = () => void worker.close(true).finally(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`bullmq worker failed: ${String(err)}\n`);
  process.exit(1);
});
