import { afterEach, describe, expect, it } from 'vitest';
import { createJob, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

const spec = (o: object) => Buffer.from(JSON.stringify(o));

/**
 * A saturated worker chooses which fetched job starts next: by priority class (weighted), then round
 * robin over tenants, within each tenant's cap. Each test dispatches every job before the worker
 * starts, so the worker fetches the whole backlog at once and arrival order (by partition) says
 * nothing about the order it should start them in; with first-come admission the small tenant's or
 * the high class's jobs would be spread through the whole run.
 */
describe('workers: fair admission across tenants and priority classes', () => {
  let s: Scenario | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  async function dispatchedBacklog(jobs: ReturnType<typeof createJob>[]): Promise<void> {
    await s!.producer.send(jobs);
    await s!.collector.waitFor(() => s!.collector.seen.length >= jobs.length, 60_000, 'every job dispatched');
  }

  /** Job ids in the order their executions started. */
  async function startOrder(): Promise<string[]> {
    return (await s!.executions()).filter((e) => e.outcome === 'started').map((e) => e.job_id);
  }

  async function allFinished(ids: string[], timeoutMs: number): Promise<void> {
    await until(`all ${ids.length} jobs finished`, timeoutMs, async () => {
      const done = new Set(
        (await s!.executions()).filter((e) => e.outcome === 'finished').map((e) => e.job_id),
      );
      return ids.every((id) => done.has(id));
    });
  }

  /**
   * A scenario with tenants `big` and `small` whose jobs (`big-i`, `small-i`, each sleeping
   * `sleepMs`) are all on the dispatch topic, due at the same time, before any worker runs.
   */
  async function twoTenantBacklog(name: string, bigN: number, smallN: number, sleepMs: number) {
    s = await Scenario.create(name, 2);
    await s.db.pool.query("INSERT INTO tenant (tenant_id) VALUES ('big'), ('small')");
    await s.startScheduler();
    const due = Date.now() + 500;
    const big = Array.from({ length: bigN }, (_, i) => `big-${i}`);
    const small = Array.from({ length: smallN }, (_, i) => `small-${i}`);
    const job = (id: string, tenantId: string) => ({
      ...createJob(id, s!.queue, due, { payload: spec({ sleepMs }) }),
      tenantId,
    });
    await dispatchedBacklog([...big.map((id) => job(id, 'big')), ...small.map((id) => job(id, 'small'))]);
    return { big, small };
  }

  it("a tenant's ten jobs start among the first, not behind another tenant's hundred and twenty", async () => {
    const { big, small } = await twoTenantBacklog('wfair', 120, 10, 20);
    await s!.startWorker({ SCHED_WORKER_CONCURRENCY: '2' });
    await allFinished([...big, ...small], 90_000);
    const order = await startOrder();
    const ranks = small.map((id) => order.indexOf(id));
    // Round robin puts them about every other start (a first few may go before the backlog is
    // all fetched); first come, first served would spread them over all 130.
    expect(Math.max(...ranks), `small tenant's start ranks ${ranks.join(',')}`).toBeLessThan(40);
  });

  it('a tenant at its cap waits while other tenants use the free slots', async () => {
    const { big, small } = await twoTenantBacklog('wcap', 12, 12, 200);
    const worker = await s!.startWorker({
      SCHED_WORKER_CONCURRENCY: '4',
      SCHED_WORKER_TENANT_LIMITS: 'big=1',
    });
    await allFinished([...big, ...small], 90_000);
    const ex = await s!.executions();
    const spans = (ids: string[]) =>
      ids.map((id) => ({
        from: ex.find((e) => e.job_id === id && e.outcome === 'started')!.started_ms,
        to: ex.find((e) => e.job_id === id && e.outcome === 'finished')!.finished_ms,
      }));
    const mostAtOnce = (sp: { from: number; to: number }[]) =>
      Math.max(...sp.map((a) => sp.filter((b) => b.from <= a.from && a.from < b.to).length));
    expect(mostAtOnce(spans(big))).toBe(1);
    expect(mostAtOnce(spans(small))).toBeGreaterThanOrEqual(2);
    expect(await worker.metric('sched_worker_tenant_capped_total', { tenant: 'big' })).toBeGreaterThan(0);
    expect(await worker.metric('sched_worker_tenant_capped_total', { tenant: 'small' })).toBe(0);
  });

  it('high-priority jobs take most of the contended slots, and the normal class still progresses', async () => {
    s = await Scenario.create('wprio', 2);
    await s.startScheduler();
    const due = Date.now() + 500;
    const normal = Array.from({ length: 40 }, (_, i) => `normal-${i}`);
    const high = Array.from({ length: 8 }, (_, i) => `high-${i}`);
    await dispatchedBacklog([
      ...normal.map((id) => createJob(id, s!.queue, due, { payload: spec({ sleepMs: 20 }) })),
      ...high.map((id) => createJob(id, s!.queue, due, { payload: spec({ sleepMs: 20 }), priority: 5 })),
    ]);
    await s.startWorker({ SCHED_WORKER_CONCURRENCY: '1' });
    await allFinished([...normal, ...high], 90_000);
    const order = await startOrder();
    const ranks = high.map((id) => order.indexOf(id));
    // Weights 7:2 give the eight high jobs about seven of every nine starts from the moment the
    // backlog is fetched; first come would spread them over all 48.
    expect(Math.max(...ranks), `high-priority start ranks ${ranks.join(',')}`).toBeLessThan(20);
    // Not strict priority: a normal job started between the second and the last high one (the
    // first start of all takes a free slot before the backlog is there to choose from).
    const sorted = [...ranks].sort((a, b) => a - b);
    expect(order.slice(sorted[1]!, sorted[sorted.length - 1]!).some((id) => id.startsWith('normal-'))).toBe(
      true,
    );
  });
});
