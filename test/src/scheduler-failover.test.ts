import { afterEach, describe, expect, it } from 'vitest';
import { claimLateness, createJob, sleep } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

const FAST_GROUP = { SCHED_SESSION_TIMEOUT_MS: '6000', SCHED_HEARTBEAT_INTERVAL_MS: '1000' };

describe('scheduler failover on the real stack', () => {
  let s: Scenario | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('kill -9 one of two schedulers under load: its partitions move and every job is dispatched', async () => {
    s = await Scenario.create('kill', 6);
    const a = await s.startScheduler(FAST_GROUP);
    await s.startScheduler(FAST_GROUP);
    await sleep(3_000); // let the group settle on both members
    const n = 3_000;
    const t0 = Date.now() + 1_000;
    await s.producer.send(
      Array.from({ length: n }, (_, i) => createJob(`k-${i}`, s!.queue, t0 + Math.floor((i * 20_000) / n))),
    );
    await sleep(6_000);
    a.signal('SIGKILL');
    await s.collector.waitFor(
      () => new Set(s!.collector.seen.map((d) => d.record.jobId)).size >= n,
      90_000,
      'every job after kill -9',
    );
    const seen = s.collector.seen.filter((d) => d.record.jobId.startsWith('k-'));
    const ids = new Set(seen.map((d) => d.record.jobId));
    expect(ids.size).toBe(n); // 0 lost
    expect(seen.filter((d) => d.record.claimedAtMs < d.record.dueAtMs)).toEqual([]);
    console.log(`kill -9 under load: ${claimLateness(seen)}`);
    // Every partition ended with the survivor, under a bumped epoch.
    const { rows } = await s.db.pool.query<{ owner_id: string; epoch: number }>(
      'SELECT owner_id, epoch FROM partition_owner',
    );
    expect(rows).toHaveLength(6);
    expect(new Set(rows.map((r) => r.owner_id)).size).toBe(1);
    expect(rows.map((r) => r.owner_id)).not.toContain(a.ownerId);
  });

  it('a stale owner (SIGSTOP past the session timeout, then SIGCONT) has every write refused by the fence', async () => {
    s = await Scenario.create('stale', 4);
    const a = await s.startScheduler(FAST_GROUP);
    await sleep(2_000);
    // A owns everything; its wheel holds jobs due while it will be frozen.
    const n = 400;
    const t0 = Date.now() + 3_000;
    await s.producer.send(Array.from({ length: n }, (_, i) => createJob(`st-${i}`, s!.queue, t0 + i * 10)));
    await sleep(1_500);
    const before = await s.db.pool.query<{ partition: number; epoch: number }>(
      'SELECT partition, epoch FROM partition_owner',
    );
    expect(before.rows).toHaveLength(4);
    a.signal('SIGSTOP');
    const b = await s.startScheduler(FAST_GROUP);
    // B takes every partition once A's session expires, bumps the epochs and dispatches the jobs.
    await s.collector.waitFor(
      () => new Set(s!.collector.seen.map((d) => d.record.jobId)).size >= n,
      60_000,
      'B dispatches all',
    );
    const taken = await s.db.pool.query<{ partition: number; epoch: number; owner_id: string }>(
      'SELECT partition, epoch, owner_id FROM partition_owner',
    );
    expect(taken.rows.every((r) => r.owner_id === b.ownerId)).toBe(true);
    a.signal('SIGCONT');
    await sleep(6_000);
    // A tried (its wheel still held the jobs) and was refused every time.
    expect(await a.metric('sched_fenced_writes_total')).toBeGreaterThan(0);
    // 0 accepted: no job was claimed under A's old epochs ...
    for (const old of before.rows) {
      const claimed = await s.db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM job WHERE partition = $1 AND claim_epoch = $2',
        [old.partition, old.epoch],
      );
      expect(claimed.rows[0]!.n).toBe(0);
    }
    // ... and no dispatch record reached the topic under them (partition and epoch are in each record).
    const old = new Set(before.rows.map((r) => `${r.partition}:${r.epoch}`));
    expect(s.collector.seen.filter((d) => old.has(`${d.record.partition}:${d.record.epoch}`))).toEqual([]);
    const ids = s.collector.seen.map((d) => d.record.jobId);
    expect(ids.length).toBe(new Set(ids).size); // and no duplicate dispatch
    console.log(`stale owner frozen, B takes over: ${claimLateness(s.collector.seen)}`);
  });
});
