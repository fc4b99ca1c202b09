import type { CpuWindow } from '../process-cpu.js';
import type { SystemFactory, SystemSession } from '../systems/system.js';
import {
  round,
  sleep,
  withCpu,
  type RepFigures,
  type WorkloadContext,
  outOfBudget,
  type WorkloadRun,
  inSession,
} from './workload.js';

const DAY_MS = 86_400_000;

/** Far-future due times (beyond every horizon), so ingest measures creation and nothing fires. */
function farFuture(n: number): Float64Array {
  const t = Date.now() + DAY_MS;
  const due = new Float64Array(n);
  for (let i = 0; i < n; i++) due[i] = t + i;
  return due;
}

/**
 * ingest: create jobs and time until the system durably accepted them (create call resolved:
 * Kafka acks=all for ours, COMMIT for pg-boss, the Redis reply under AOF everysec for BullMQ).
 * `batched`: `batchedJobs` jobs in create calls of 2,000, 2 in flight. `single`: one job per call,
 * `singleConcurrency` in flight, for at most `singleCapMs` (the rate is what was done in that time).
 * For ours, also the rate until the scheduler committed the batched set to Postgres (stricter).
 */
export async function ingest(f: SystemFactory, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  return inSession(f, (s) => ingestIn(s, ctx));
}

async function ingestIn(s: SystemSession, ctx: WorkloadContext): Promise<WorkloadRun[]> {
  const p = ctx.plan.ingest;
  const batched: RepFigures[] = [];
  const single: RepFigures[] = [];
  const cpuB: CpuWindow[] = [];
  const cpuS: CpuWindow[] = [];
  const notes: string[] = [];
  for (let rep = 0; rep < ctx.plan.reps; rep++) {
    if (outOfBudget(ctx, rep, notes)) break;
    // batched
    const log = ctx.hub.open(farFuture(p.batchedJobs));
    const t0 = Date.now();
    let ackMs = 0;
    let commitMs = NaN;
    const { cpu } = await withCpu(s, async () => {
      await s.createBatched(log, 0, p.batchedJobs);
      ackMs = Date.now() - t0;
      if (s.uncommitted) {
        const deadline = Date.now() + p.commitCapMs;
        while (Date.now() < deadline) {
          if ((await s.uncommitted()) === 0) {
            commitMs = Date.now() - t0;
            break;
          }
          await sleep(100);
        }
      }
    });
    cpuB.push(cpu);
    const ackRate = (p.batchedJobs * 1000) / ackMs;
    const committedRate = (p.batchedJobs * 1000) / commitMs;
    batched.push({
      jobsPerSec: round(ackRate),
      extra: s.uncommitted ? { committedJobsPerSec: round(committedRate), committedMs: commitMs } : {},
    });
    if (s.uncommitted && Number.isNaN(commitMs))
      notes.push(`rep ${rep + 1}: not all committed within ${p.commitCapMs} ms`);
    ctx.hub.close(log);

    // single: one create per call, bounded in count and time
    const slog = ctx.hub.open(farFuture(p.singleJobs));
    const t1 = Date.now();
    let done = 0;
    const { cpu: cpu2 } = await withCpu(s, async () => {
      const chunk = 1_000;
      for (let lo = 0; lo < p.singleJobs && Date.now() - t1 < p.singleCapMs; lo += chunk) {
        const hi = Math.min(p.singleJobs, lo + chunk);
        await s.createSingle(slog, lo, hi, p.singleConcurrency);
        done = hi;
      }
    });
    cpuS.push(cpu2);
    const singleRate = (done * 1000) / (Date.now() - t1);
    single.push({ jobsPerSec: round(singleRate), extra: { jobs: done } });
    ctx.hub.close(slog);
    ctx.say(
      `  rep ${rep + 1}: batched ${round(ackRate)} jobs/s acked${s.uncommitted ? `, ${round(committedRate)} jobs/s committed by the scheduler` : ''}; single ${round(singleRate)} jobs/s (${done} jobs, ${p.singleConcurrency} in flight)`,
    );
  }
  return [
    { system: s.system, workload: 'ingest', variant: 'batched', reps: batched, cpu: cpuB, notes },
    { system: s.system, workload: 'ingest', variant: 'single', reps: single, cpu: cpuS, notes: [] },
  ];
}
