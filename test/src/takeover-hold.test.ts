import { afterEach, describe, expect, it } from 'vitest';
import type { SchedulerProcess } from './support/app-process.js';
import { cancelJob, createJob, rescheduleJob, sleep, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// Invariant 8 (commands before firing): a cancel or reschedule acknowledged by Kafka before a job's
// due time wins, even when no scheduler was alive to apply it and the one that takes the partition
// starts after the job is due. Each test kills every scheduler, sends the commands while none runs,
// and starts a scheduler at the jobs' due time: the new owner must apply them before it fires.

const FAST_GROUP = {
  SCHED_SESSION_TIMEOUT_MS: '3000',
  SCHED_HEARTBEAT_INTERVAL_MS: '500',
  LOG_LEVEL: 'info',
};
const N = 300;

/** 300 jobs due between `dueMs` and `dueMs` + 4 s, created and applied (in Postgres). */
async function createDueSoon(s: Scenario, prefix: string, dueMs: number): Promise<string[]> {
  const ids = Array.from({ length: N }, (_, i) => `${prefix}-${i}`);
  await s.producer.send(ids.map((id, i) => createJob(id, s.queue, dueMs + Math.floor((i * 4_000) / N))));
  await until('every create applied', 30_000, async () => {
    const { rows } = await s.db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM job WHERE job_id LIKE $1',
      [`${prefix}-%`],
    );
    return rows[0]!.n === N;
  });
  return ids;
}

async function kill(p: SchedulerProcess): Promise<void> {
  p.signal('SIGKILL');
  await p.exited;
}

/** Per-partition hold times the scheduler logged ('takeover hold ended'), ms. */
function holdsLogged(p: SchedulerProcess): { partition: number; heldMs: number; backlog: number }[] {
  return p
    .output()
    .split('\n')
    .filter((l) => l.includes('takeover hold ended'))
    .map((l) => JSON.parse(l) as { partition: number; heldMs: number; backlog: number })
    .map(({ partition, heldMs, backlog }) => ({ partition, heldMs, backlog }));
}

const said = (holds: ReturnType<typeof holdsLogged>): string =>
  holds.map((h) => `p${h.partition} ${h.heldMs} ms (${h.backlog} commands)`).join(', ') || 'none';

/**
 * What happened to the jobs after the restart: dispatch records (collector), executions (the test
 * handlers) and states, per job id.
 */
async function fates(s: Scenario, ids: string[]) {
  const want = new Set(ids);
  const dispatched = s.collector.seen.filter((d) => want.has(d.record.jobId));
  const executions = (await s.executions()).filter((e) => want.has(e.job_id));
  const states = await s.jobStates();
  return { dispatched, executions, states };
}

async function waitUntil(atMs: number): Promise<void> {
  await sleep(Math.max(0, atMs - Date.now()));
}

describe('a new owner applies the commands on Kafka before it fires (takeover hold)', () => {
  let s: Scenario | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('cancels and reschedules sent while no scheduler ran win against jobs already due when one starts', async () => {
    s = await Scenario.create('hold', 4);
    const a = await s.startScheduler(FAST_GROUP);
    await s.startWorker();
    const D = Date.now() + 22_000;
    const ids = await createDueSoon(s, 'h', D);
    await kill(a);
    // While no scheduler runs: cancel the even ones, move the odd ones to D + 20 s. Acknowledged by
    // Kafka (acks=all) well before any of them is due.
    const cancelled = ids.filter((_, i) => i % 2 === 0);
    const moved = ids.filter((_, i) => i % 2 === 1);
    const newDue = D + 20_000;
    await waitUntil(D - 12_000);
    await s.producer.send([
      ...cancelled.map((id) => cancelJob(id)),
      ...moved.map((id) => rescheduleJob(id, newDue)),
    ]);
    expect(Date.now()).toBeLessThan(D - 5_000);
    // A scheduler starts once the jobs are due (the first of them ~1 s ago).
    await waitUntil(D + 1_000);
    const b = await s.startScheduler(FAST_GROUP);
    await s.explained(() =>
      s!.collector.waitFor(
        () => new Set(s!.collector.seen.map((d) => d.record.jobId)).size >= moved.length,
        60_000,
        'every rescheduled job dispatched at its new time',
      ),
    );
    await sleep(3_000); // any late dispatch of a cancelled job would be here by now
    const f = await fates(s, ids);
    const cancelledSet = new Set(cancelled);
    // 0 of the cancelled jobs dispatched, started or finished otherwise than CANCELLED.
    expect(f.dispatched.filter((d) => cancelledSet.has(d.record.jobId)).map((d) => d.record.jobId)).toEqual(
      [],
    );
    expect(f.executions.filter((e) => cancelledSet.has(e.job_id))).toEqual([]);
    expect(cancelled.filter((id) => f.states.get(id) !== 'CANCELLED')).toEqual([]);
    // Each rescheduled job ran once, at its new time, with the version the reschedule gave it.
    const movedDispatches = f.dispatched.filter((d) => !cancelledSet.has(d.record.jobId));
    expect(movedDispatches.filter((d) => d.record.claimedAtMs < newDue)).toEqual([]);
    expect(movedDispatches.filter((d) => d.record.version !== 2)).toEqual([]);
    expect(new Set(movedDispatches.map((d) => d.record.jobId)).size).toBe(moved.length);
    await until('every rescheduled job started', 30_000, async () => {
      const ex = (await s!.executions()).filter(
        (e) => !cancelledSet.has(e.job_id) && e.job_id.startsWith('h-'),
      );
      return new Set(ex.map((e) => e.job_id)).size === moved.length;
    });
    const holds = holdsLogged(b);
    console.log(
      `takeover hold: ${N} commands sent while no scheduler ran; held ${said(holds)}; ` +
        `0 of ${cancelled.length} cancelled dispatched, ${moved.length} rescheduled each once at the new time`,
    );
    expect(holds.length).toBeGreaterThan(0);
  });

  it('the same with two schedulers, the survivor of the first kill restarted too', async () => {
    s = await Scenario.create('hold2', 4);
    const a = await s.startScheduler(FAST_GROUP);
    const b = await s.startScheduler(FAST_GROUP);
    await s.startWorker();
    const D = Date.now() + 30_000;
    const ids = await createDueSoon(s, 'g', D);
    // A dies; B, alive, takes its partitions and applies a first half of the cancels itself.
    await kill(a);
    await until('B owns every partition', 20_000, async () => {
      const { rows } = await s!.db.pool.query<{ owner_id: string }>('SELECT owner_id FROM partition_owner');
      return rows.length === 4 && rows.every((r) => r.owner_id === b.ownerId);
    });
    const live = ids.filter((_, i) => i % 3 === 0);
    await s.producer.send(live.map((id) => cancelJob(id)));
    await until('B applied the first cancels', 10_000, async () => {
      const st = await s!.jobStates();
      return live.every((id) => st.get(id) === 'CANCELLED');
    });
    // Then B dies too, and the rest is cancelled while nobody runs.
    await kill(b);
    const dark = ids.filter((_, i) => i % 3 !== 0);
    await waitUntil(D - 10_000);
    await s.producer.send(dark.map((id) => cancelJob(id)));
    // Two schedulers start at the due time.
    await waitUntil(D + 1_000);
    const [c, d] = await Promise.all([s.startScheduler(FAST_GROUP), s.startScheduler(FAST_GROUP)]);
    await sleep(12_000); // past the last due time (D + 4 s), the group settled
    const f = await fates(s, ids);
    expect(f.dispatched.map((x) => x.record.jobId)).toEqual([]);
    expect(f.executions).toEqual([]);
    expect(ids.filter((id) => f.states.get(id) !== 'CANCELLED')).toEqual([]);
    console.log(
      `takeover hold, two schedulers restarted: held ${said([...holdsLogged(c), ...holdsLogged(d)])}; 0 of ${N} cancelled dispatched`,
    );
  });

  it('holds for a backlog of 100,000 commands at takeover and reports the hold', async () => {
    s = await Scenario.create('hold3', 4);
    const a = await s.startScheduler(FAST_GROUP);
    await s.startWorker();
    const D = Date.now() + 40_000;
    const ids = await createDueSoon(s, 'b', D);
    await kill(a);
    // 100,000 commands ahead of the cancels: creates of jobs due in an hour, across the partitions.
    const far = Date.now() + 3_600_000;
    const backlog = 100_000;
    const t0 = Date.now();
    await s.producer.send(Array.from({ length: backlog }, (_, i) => createJob(`f-${i}`, s!.queue, far + i)));
    await s.producer.send(ids.map((id) => cancelJob(id)));
    const producedMs = Date.now() - t0;
    expect(Date.now()).toBeLessThan(D - 2_000);
    await waitUntil(D + 1_000);
    const b = await s.startScheduler(FAST_GROUP);
    await s.explained(() =>
      until('the backlog applied', 120_000, async () => {
        const st = await s!.jobStates();
        return ids.every((id) => st.get(id) === 'CANCELLED');
      }),
    );
    await sleep(8_000);
    const f = await fates(s, ids);
    expect(f.dispatched.map((x) => x.record.jobId)).toEqual([]);
    expect(f.executions).toEqual([]);
    const holds = holdsLogged(b);
    expect(holds.map((h) => h.partition).sort()).toEqual([0, 1, 2, 3]);
    const count = await b.metric('sched_takeover_hold_seconds_count', { outcome: 'caught_up' });
    const sum = await b.metric('sched_takeover_hold_seconds_sum', { outcome: 'caught_up' });
    expect(count).toBe(4);
    console.log(
      `takeover hold, ${backlog + N} commands unapplied at takeover (produced in ${producedMs} ms): ` +
        `held ${said(holds)}; ` +
        `mean ${Math.round((sum / count) * 1000)} ms; 0 of ${N} cancelled dispatched`,
    );
  });
  it('measures the window a live owner leaves: command produced → applied, in steady state', async () => {
    s = await Scenario.create('hold4', 4);
    const a = await s.startScheduler(FAST_GROUP);
    await s.startWorker();
    // Far-future jobs to cancel, then 10 s of a steady stream: 200 creates/s due 5 s later and
    // 50 cancels/s, in batches every 100 ms, as a busy producer would send them.
    const far = Date.now() + 3_600_000;
    const targets = Array.from({ length: 500 }, (_, i) => `w-${i}`);
    await s.producer.send(targets.map((id, i) => createJob(id, s!.queue, far + i)));
    await until('targets applied', 30_000, async () => {
      const st = await s!.jobStates();
      return targets.every((id) => st.has(id));
    });
    const before = await a.metric('sched_command_apply_lag_seconds_count');
    let sent = 0;
    for (let tick = 0; tick < 100; tick++) {
      const at = Date.now();
      const creates = Array.from({ length: 20 }, (_, i) => createJob(`l-${tick}-${i}`, s!.queue, at + 5_000));
      const cancels = targets.slice(tick * 5, tick * 5 + 5).map((id) => cancelJob(id));
      await s.producer.send([...creates, ...cancels]);
      sent += creates.length + cancels.length;
      await sleep(Math.max(0, at + 100 - Date.now()));
    }
    await until('every cancel applied', 20_000, async () => {
      const st = await s!.jobStates();
      return targets.every((id) => st.get(id) === 'CANCELLED');
    });
    const count = (await a.metric('sched_command_apply_lag_seconds_count')) - before;
    expect(count).toBeGreaterThanOrEqual(sent);
    // Quantiles from the histogram's buckets (upper bounds), over the whole run.
    const text = await a.metrics();
    const buckets = [
      ...text.matchAll(/^sched_command_apply_lag_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\S+)$/gm),
    ]
      .map((m) => ({ le: Number(m[1]), n: Number(m[2]) }))
      .sort((x, y) => x.le - y.le);
    const total = buckets[buckets.length - 1]!.n;
    const q = (p: number) => buckets.find((b) => b.n >= p * total)?.le;
    const sum = await a.metric('sched_command_apply_lag_seconds_sum');
    console.log(
      `apply lag of a live owner (record timestamp → committed), ${total} commands at ~250/s: ` +
        `mean ${((sum / total) * 1000).toFixed(1)} ms, p50 ≤ ${(q(0.5)! * 1000).toFixed(0)} ms, ` +
        `p99 ≤ ${(q(0.99)! * 1000).toFixed(0)} ms, max ≤ ${(q(1)! * 1000).toFixed(0)} ms`,
    );
  });
});
