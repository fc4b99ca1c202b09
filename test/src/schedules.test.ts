import { afterEach, describe, expect, it } from 'vitest';
import type { CommandRejected } from '@sched/contracts';
import { occurrenceList } from '@sched/store';
import { Collector, contracts, scheduleCommand, sleep, upsertSchedule, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

const spec = (o: object) => Buffer.from(JSON.stringify(o));

describe('recurring schedules on the real stack', () => {
  let s: Scenario | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });
  const fates = async (id: string) => (await occurrenceList(s!.db.pool, id)).reverse();

  it('rejects bad recurrences with a reason and stores nothing half-way', async () => {
    s = await Scenario.create('sbad', 1);
    await s.startScheduler();
    const rejected = await new Collector([s.rejectedTopic], false).start();
    const now = Date.now();
    await s.producer.send([
      upsertSchedule('bad-cron', s.queue, { cron: '61 * * * *' }),
      upsertSchedule('bad-zone', s.queue, { cron: '0 9 * * *', timeZone: 'Mars/Olympus_Mons' }),
      upsertSchedule('bad-window', s.queue, { cron: '0 9 * * *', startAtMs: now + 10_000, endAtMs: now }),
      upsertSchedule('bad-interval', s.queue, { intervalMs: 0 }),
      upsertSchedule('good', s.queue, { intervalMs: 60_000 }),
    ]);
    await rejected.waitFor(() => rejected.raw.length >= 4, 20_000, 'four rejections');
    const c = await contracts();
    const got: CommandRejected[] = [];
    for (const m of rejected.raw) got.push(await c.decodeRejected(m.value!));
    expect(got.map((r) => [r.originalKey?.toString(), r.reasonCode])).toEqual([
      ['bad-cron', 'INVALID_CRON'],
      ['bad-zone', 'UNKNOWN_TIME_ZONE'],
      ['bad-window', 'INVALID_SCHEDULE_WINDOW'],
      ['bad-interval', 'INVALID_INTERVAL'],
    ]);
    await until(
      'good schedule stored',
      10_000,
      async () =>
        (await s!.db.pool.query("SELECT 1 FROM schedule WHERE schedule_id = 'good'")).rowCount === 1,
    );
    const { rows } = await s.db.pool.query<{ schedule_id: string }>('SELECT schedule_id FROM schedule');
    expect(rows.map((r) => r.schedule_id)).toEqual(['good']);
    await rejected.stop();
  });

  it('fires an interval schedule on time, records each occurrence, and completes at maxRuns', async () => {
    s = await Scenario.create('sint', 1);
    await s.startScheduler();
    await s.producer.send([upsertSchedule('every-sec', s.queue, { intervalMs: 1_000, maxRuns: 4 })]);
    await until('4 occurrences dispatched', 20_000, async () => s!.collector.seen.length >= 4);
    await sleep(2_000);
    const seen = s.collector.seen.filter((d) => d.record.scheduleId === 'every-sec');
    expect(seen).toHaveLength(4);
    for (const d of seen) {
      expect(d.record.claimedAtMs).toBeGreaterThanOrEqual(d.record.occurrenceAtMs!);
      expect(d.record.claimedAtMs - d.record.occurrenceAtMs!).toBeLessThan(500);
      expect(d.record.occurrenceAtMs! % 1_000).toBe(0);
    }
    expect((await fates('every-sec')).map((o) => o.fate)).toEqual(['FIRED', 'FIRED', 'FIRED', 'FIRED']);
    const st = await s.db.pool.query<{ state: string; runs: number }>(
      "SELECT state, runs FROM schedule WHERE schedule_id = 'every-sec'",
    );
    expect(st.rows[0]).toEqual({ state: 'COMPLETED', runs: 4 });
  });

  it('misfire policies after the scheduler was down for several cycles', async () => {
    s = await Scenario.create('smis', 2);
    const env = {
      SCHED_MISFIRE_THRESHOLD_MS: '1500',
      SCHED_RECONCILE_GRACE_MS: '500',
      SCHED_SESSION_TIMEOUT_MS: '6000',
      SCHED_HEARTBEAT_INTERVAL_MS: '1000',
    };
    const a = await s.startScheduler(env);
    await s.producer.send([
      upsertSchedule('once', s.queue, { intervalMs: 1_000, misfirePolicy: 'FIRE_ONCE' }),
      upsertSchedule('all', s.queue, { intervalMs: 1_000, misfirePolicy: 'FIRE_ALL' }),
      upsertSchedule('skip', s.queue, { intervalMs: 1_000, misfirePolicy: 'SKIP' }),
    ]);
    await until(
      'each fired twice',
      15_000,
      async () =>
        (await fates('skip')).length >= 2 &&
        (await fates('once')).length >= 2 &&
        (await fates('all')).length >= 2,
    );
    a.signal('SIGKILL');
    const downAt = Date.now();
    await sleep(6_000);
    // Taken before the start: the new process may own and generate before its READY line is read.
    const upAt = Date.now();
    await s.startScheduler(env);
    // The new scheduler owns the partitions once the dead one's session expired; then it handles
    // the missed occurrences in one pass and fires on time again.
    await until('generation resumed after the restart', 60_000, async () => {
      for (const id of ['once', 'all', 'skip']) {
        if (!(await fates(id)).some((o) => o.nominalAtMs > upAt + 1_000 && o.fate === 'FIRED')) return false;
      }
      return true;
    });
    for (const id of ['once', 'all', 'skip']) {
      const ledger = await fates(id);
      // One ledger row per nominal second, no gaps, no doubles.
      const times = ledger.map((o) => o.nominalAtMs);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(1_000);
      const missedWindow = ledger.filter((o) => o.nominalAtMs > downAt && o.nominalAtMs < upAt - 2_000);
      expect(missedWindow.length).toBeGreaterThanOrEqual(3);
      const kinds = missedWindow.map((o) => o.fate);
      if (id === 'skip') expect(new Set(kinds)).toEqual(new Set(['MISSED']));
      if (id === 'all') expect(new Set(kinds)).toEqual(new Set(['FIRED']));
      if (id === 'once') {
        // All late ones but the most recent were coalesced into it.
        const late = ledger.filter(
          (o) => o.nominalAtMs > downAt && (o.fate === 'COALESCED' || o.detail?.startsWith('misfire')),
        );
        expect(late.filter((o) => o.fate === 'FIRED')).toHaveLength(1);
        expect(late[late.length - 1]!.fate).toBe('FIRED');
        expect(late.filter((o) => o.fate === 'COALESCED').length).toBeGreaterThanOrEqual(3);
      }
    }
    // Every FIRED occurrence has exactly one job, and was dispatched exactly once.
    const { rows } = await s.db.pool.query<{ n: number; j: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT job_id)::int AS j FROM occurrence WHERE fate IN ('FIRED','DST_SHIFTED')",
    );
    expect(rows[0]!.n).toBe(rows[0]!.j);
    await until(
      'fired ones dispatched',
      10_000,
      async () => new Set(s!.collector.seen.map((d) => d.record.jobId)).size >= rows[0]!.n,
    );
    const ids = s.collector.seen.map((d) => d.record.jobId);
    expect(ids.length).toBe(new Set(ids).size);
  });

  it('a crash between generating an occurrence and advancing the schedule neither loses nor doubles it', async () => {
    s = await Scenario.create('scrash', 1);
    const crashing = await s.startScheduler({ SCHED_TEST_CRASH_AFTER_GENERATE: 'true' });
    await s.producer.send([upsertSchedule('crashy', s.queue, { intervalMs: 2_000, maxRuns: 3 })]);
    await crashing.exited; // killed itself mid-transaction at the first generation
    expect(crashing.output()).toMatch(/test hook: SIGKILL/);
    await s.startScheduler();
    await until('3 runs', 20_000, async () => s!.collector.seen.length >= 3);
    await sleep(1_000);
    const ledger = await fates('crashy');
    expect(ledger.map((o) => o.fate)).toEqual(['FIRED', 'FIRED', 'FIRED']);
    const jobIds = s.collector.seen.map((d) => d.record.jobId);
    expect(jobIds).toHaveLength(3);
    expect(new Set(jobIds).size).toBe(3);
  });

  it('overlap policies with a slow handler', async () => {
    s = await Scenario.create('sovl', 2);
    await s.startScheduler({ SCHED_GENERATE_EVERY_MS: '200' });
    await s.startWorker({ SCHED_LEASE_TTL_MS: '3000', SCHED_HEARTBEAT_EVERY_MS: '500' });
    const slow = spec({ sleepMs: 2_600 });
    await s.producer.send(
      (['ALLOW', 'SKIP', 'BUFFER_ONE', 'CANCEL_PREVIOUS'] as const).map((p) =>
        upsertSchedule(`ov-${p}`, s!.queue, { intervalMs: 1_000, overlapPolicy: p, maxRuns: 3 }, slow),
      ),
    );
    await sleep(9_000);
    const f = async (p: string) => (await fates(`ov-${p}`)).slice(0, 4).map((o) => o.fate);
    // ALLOW: every second fires though the previous run goes on.
    expect((await f('ALLOW')).slice(0, 3)).toEqual(['FIRED', 'FIRED', 'FIRED']);
    // SKIP: the occurrences during a run are skipped.
    const skip = await f('SKIP');
    expect(skip[0]).toBe('FIRED');
    expect(skip.slice(1, 3)).toEqual(['SKIPPED', 'SKIPPED']);
    // BUFFER_ONE: one waits (then fires when the run ends), the next is skipped.
    const buf = await fates('ov-BUFFER_ONE');
    expect(buf[0]!.fate).toBe('FIRED');
    expect(buf[1]!.fate).toBe('FIRED'); // was BUFFERED, released after the first run
    expect(buf[1]!.detail).toBe('released from the overlap buffer');
    expect(buf[2]!.fate).toBe('SKIPPED');
    // CANCEL_PREVIOUS: each new occurrence cancels the running one.
    const cp = await fates('ov-CANCEL_PREVIOUS');
    expect(cp.slice(0, 3).map((o) => o.fate)).toEqual(['FIRED', 'FIRED', 'FIRED']);
    const states = await s.jobStates();
    expect(states.get(cp[0]!.jobId!)).toBe('CANCELLED');
  });

  it('pause records the occurrences it holds back; resume continues with the next one', async () => {
    s = await Scenario.create('spause', 1);
    await s.startScheduler();
    await s.producer.send([upsertSchedule('pz', s.queue, { intervalMs: 1_000 })]);
    await until('2 fired', 10_000, async () => (await fates('pz')).length >= 2);
    await s.producer.send([scheduleCommand('PauseSchedule', 'pz')]);
    await sleep(3_500);
    await s.producer.send([scheduleCommand('ResumeSchedule', 'pz')]);
    await sleep(2_000);
    const ledger = await fates('pz');
    expect(ledger.filter((o) => o.fate === 'PAUSED').length).toBeGreaterThanOrEqual(2);
    expect(ledger[ledger.length - 1]!.fate).toBe('FIRED');
    const times = ledger.map((o) => o.nominalAtMs);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(1_000);
  });
});
