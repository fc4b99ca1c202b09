import {
  homeRegion,
  inTransaction,
  jobCreateBatch,
  NotHomeRegionError,
  partitionClaim,
  regionClaimUnset,
  regionPromote,
  RegionPromoteError,
} from '@sched/store';
import { afterEach, describe, expect, it } from 'vitest';
import { schemaForSuite } from './support/isolation.js';
import { createJob, sleep, until } from './support/kafka.js';
import { newJob } from './support/new-job.js';
import { Scenario } from './support/scenario.js';
import type { SchedulerProcess } from './support/app-process.js';

const FAST_GROUP = { SCHED_SESSION_TIMEOUT_MS: '3000', SCHED_HEARTBEAT_INTERVAL_MS: '500' };

async function owned(p: SchedulerProcess): Promise<number> {
  return p.metric('sched_partitions_owned');
}

describe('a home region, and failover to a standby region fenced at region level', () => {
  let s: Scenario | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('east dispatches while home; promoting west fences east at once; west takes over with 0 lost, 0 twice; and back', async () => {
    s = await Scenario.create('region', 4);
    const by = { actor: 'test', reason: 'region drill', permissions: ['region:promote'] };
    // Two regions' schedulers on the same command topic, each region its own consumer group. No
    // home region is set: east, the first to start, makes itself home; west, later, stands by.
    const east = await s.startScheduler({ ...FAST_GROUP, SCHED_REGION: 'east' });
    await until('east is home', 20_000, async () => (await owned(east)) === 4);
    const west = await s.startScheduler({
      ...FAST_GROUP,
      SCHED_REGION: 'west',
      SCHED_GROUP_ID: `${s.groupId}-west`,
    });
    await until('east owns every partition, west stands by', 30_000, async () => {
      return (
        (await owned(east)) === 4 &&
        (await west.metric('sched_region_standby')) === 1 &&
        (await owned(west)) === 0
      );
    });

    const n = 800;
    const t0 = Date.now() + 1_000;
    await s.producer.send(
      Array.from({ length: n }, (_, i) => createJob(`rg-${i}`, s!.queue, t0 + Math.floor((i * 16_000) / n))),
    );
    await sleep(6_000);
    const before = await s.db.pool.query<{ partition: number; epoch: string }>(
      'SELECT partition, epoch FROM partition_owner',
    );
    const promoted = await regionPromote(s.db.pool, 'west', by);
    const promotedAt = Date.now();
    expect(promoted.before).toBe('east');
    expect(promoted.fencedPartitions).toBe(4);

    // East learns of it from the home region itself (every 2 s), not only from refused writes.
    await until('east stands by', 10_000, async () => {
      return (await east.metric('sched_region_standby')) === 1 && (await owned(east)) === 0;
    });
    console.log(`east stood by ${Date.now() - promotedAt} ms after the promotion`);
    await until('west owns every partition, east stands by', 30_000, async () => {
      return (
        (await owned(west)) === 4 &&
        (await east.metric('sched_region_standby')) === 1 &&
        (await owned(east)) === 0
      );
    });
    console.log(`west owns every partition ${Date.now() - promotedAt} ms after the promotion`);
    await s.collector.waitFor(
      () => new Set(s!.collector.seen.map((d) => d.record.jobId)).size >= n,
      60_000,
      'every job across the failover',
    );
    const seen = s.collector.seen.filter((d) => d.record.jobId.startsWith('rg-'));
    expect(new Set(seen.map((d) => d.record.jobId)).size).toBe(n); // 0 lost
    expect(seen).toHaveLength(n); // 0 dispatched twice
    expect(seen.filter((d) => d.record.claimedAtMs < d.record.dueAtMs)).toEqual([]); // 0 early
    const byEast = seen.filter((d) => d.record.claimedAtMs < promotedAt).length;
    expect(byEast).toBeGreaterThan(0);
    expect(byEast).toBeLessThan(n);
    // No claim under one of east's epochs committed after the promotion did.
    const late = await s.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM job j
       JOIN unnest($1::int[], $2::bigint[]) AS e(partition, epoch) ON e.partition = j.partition
       WHERE j.claim_epoch <= e.epoch AND j.dispatched_at > to_timestamp($3 / 1000.0)`,
      [before.rows.map((r) => r.partition), before.rows.map((r) => r.epoch), promotedAt],
    );
    expect(late.rows[0]!.n).toBe(0);
    const audit = await s.db.pool.query<{ action: string; actor: string; region: string }>(
      `SELECT action, actor, subject->>'region' AS region FROM audit_log ORDER BY at`,
    );
    expect(audit.rows).toEqual([
      { action: 'region.claim', actor: east.ownerId, region: 'east' },
      { action: 'region.promote', actor: 'test', region: 'west' },
    ]);

    // Failback: east's process, standing by, takes its partitions again.
    await regionPromote(s.db.pool, 'east', by);
    await until('east owns every partition again, west stands by', 30_000, async () => {
      return (await owned(east)) === 4 && (await west.metric('sched_region_standby')) === 1;
    });
    const m = 100;
    const t1 = Date.now() + 1_500;
    await s.producer.send(Array.from({ length: m }, (_, i) => createJob(`fb-${i}`, s!.queue, t1 + i * 5)));
    await s.collector.waitFor(
      () => s!.collector.seen.filter((d) => d.record.jobId.startsWith('fb-')).length >= m,
      30_000,
      'every job after the failback',
    );
    expect(new Set(s.collector.seen.map((d) => d.record.jobId)).size).toBe(n + m);
  });
});

describe('store: the home region', () => {
  const db = schemaForSuite('home');

  it('no home region: any claim; a promotion refuses other regions, fences every owner, is audited', async () => {
    expect(await homeRegion(db().pool)).toBeUndefined();
    const a = await partitionClaim(db().pool, 0, 'a'); // no region, none set: allowed
    await expect(
      regionPromote(db().pool, 'west', { actor: '', reason: 'x', permissions: ['region:promote'] }),
    ).rejects.toThrow(/actor/);
    const p = await regionPromote(db().pool, 'west', {
      actor: 'ops',
      reason: 'drill',
      permissions: ['region:promote'],
    });
    expect(p).toMatchObject({ before: null, fencedPartitions: 1, home: { region: 'west', epoch: 1 } });
    // The old owner's writes match nothing; other regions (or none) cannot claim.
    const created = await inTransaction(db().pool, (c) =>
      jobCreateBatch(c, 0, a.epoch, [newJob('hr-1', Date.now())]),
    );
    expect(created.size).toBe(0);
    for (const region of [undefined, 'east']) {
      const err = await partitionClaim(db().pool, 0, 'b', region).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotHomeRegionError);
      expect((err as NotHomeRegionError).code).toBe('SCHED_E_NOT_HOME_REGION');
    }
    const w = await partitionClaim(db().pool, 0, 'w', 'west');
    expect(w.epoch).toBe(a.epoch + 2); // the promotion's bump, then west's
    const { rows } = await db().pool.query<{
      actor: string;
      reason: string;
      subject: unknown;
      count: number;
    }>(`SELECT actor, reason, subject, count FROM audit_log WHERE action = 'region.promote'`);
    expect(rows).toEqual([
      { actor: 'ops', reason: 'drill', subject: { region: 'west', before: null, term: 1 }, count: 1 },
    ]);
  });

  it('refuses without the permission; the region already home is left as it is', async () => {
    const err = await regionPromote(db().pool, 'south', { actor: 'ops', reason: 'x', permissions: [] }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RegionPromoteError);
    expect((err as RegionPromoteError).code).toBe('SCHED_E_REGION_FORBIDDEN');
    const home = (await homeRegion(db().pool))!;
    const again = await regionPromote(db().pool, home.region, {
      actor: 'ops',
      reason: 'again',
      permissions: ['region:promote'],
    });
    expect(again).toMatchObject({ changed: false, fencedPartitions: 0, home: { epoch: home.epoch } });
    // Once a home region is set, a claim of an unset one changes nothing.
    expect((await regionClaimUnset(db().pool, 'elsewhere', 'owner-x')).region).toBe(home.region);
  });

  it('a promotion waits for an owner write in flight, and a claim after it sees the new region', async () => {
    await regionPromote(db().pool, 'east', {
      actor: 'ops',
      reason: 'setup',
      permissions: ['region:promote'],
    });
    const own = await partitionClaim(db().pool, 5, 'e', 'east');
    const client = await db().pool.connect();
    try {
      await client.query('BEGIN');
      const c = await jobCreateBatch(client, 5, own.epoch, [newJob('hr-2', Date.now() + 60_000)]);
      expect(c.size).toBe(1);
      let promoted = false;
      const promotion = regionPromote(db().pool, 'west', {
        actor: 'ops',
        reason: 'failover',
        permissions: ['region:promote'],
      }).then((r) => {
        promoted = true;
        return r;
      });
      await sleep(300);
      expect(promoted).toBe(false); // held by the owner's transaction
      await client.query('COMMIT');
      await promotion;
    } finally {
      client.release();
    }
    const job = await db().pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM job WHERE job_id = 'hr-2'`,
    );
    expect(job.rows[0]!.n).toBe(1); // committed before the fence moved
    await expect(partitionClaim(db().pool, 5, 'e', 'east')).rejects.toBeInstanceOf(NotHomeRegionError);
  });
});

describe('store: the first region to start', () => {
  const db = schemaForSuite('firstregion');

  it('makes itself home when none is set, fencing what owners there were, audited as region.claim', async () => {
    const a = await partitionClaim(db().pool, 0, 'a');
    const home = await regionClaimUnset(db().pool, 'north', 'owner-n');
    expect(home).toMatchObject({ region: 'north', epoch: 1 });
    await expect(partitionClaim(db().pool, 0, 'a')).rejects.toBeInstanceOf(NotHomeRegionError);
    expect((await partitionClaim(db().pool, 0, 'n', 'north')).epoch).toBe(a.epoch + 2);
    const { rows } = await db().pool.query(`SELECT action, actor FROM audit_log`);
    expect(rows).toEqual([{ action: 'region.claim', actor: 'owner-n' }]);
  });
});
