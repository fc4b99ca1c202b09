import { afterEach, describe, expect, it } from 'vitest';
import { claimLateness, createJob, sleep, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';
import type { SchedulerProcess } from './support/app-process.js';

const FAST_GROUP = { SCHED_SESSION_TIMEOUT_MS: '6000', SCHED_HEARTBEAT_INTERVAL_MS: '1000' };

type Owners = Map<number, { owner: string; epoch: number }>;

async function owners(s: Scenario): Promise<Owners> {
  const { rows } = await s.db.pool.query<{ partition: number; owner_id: string; epoch: number }>(
    'SELECT partition, owner_id, epoch FROM partition_owner',
  );
  return new Map(rows.map((r) => [r.partition, { owner: r.owner_id, epoch: Number(r.epoch) }]));
}

/** Waits until the processes own the given numbers of partitions (by their own gauge). */
async function settled(procs: SchedulerProcess[], want: number[], what: string): Promise<void> {
  await until(what, 45_000, async () => {
    const got = await Promise.all(procs.map((p) => p.metric('sched_partitions_owned')));
    return got.every((n, i) => n === want[i]);
  });
}

/** Partitions whose owner or epoch differs between two snapshots. */
function moved(before: Owners, after: Owners): number[] {
  return [...after]
    .filter(([p, o]) => before.get(p)?.epoch !== o.epoch || before.get(p)?.owner !== o.owner)
    .map(([p]) => p)
    .sort((a, b) => a - b);
}

describe('rebalances move only the partitions balance needs (sticky assignment)', () => {
  let s: Scenario | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('a third scheduler joining takes 4 of 12 partitions and nothing else moves; leaving, it hands back only those', async () => {
    s = await Scenario.create('sticky', 12);
    const a = await s.startScheduler(FAST_GROUP);
    const b = await s.startScheduler(FAST_GROUP);
    await settled([a, b], [6, 6], 'two schedulers own 6 partitions each');
    const two = await owners(s);
    expect(two.size).toBe(12);

    // Jobs due before, during and after the join and the leave: every one once, none early.
    const n = 1_200;
    const t0 = Date.now() + 1_000;
    await s.producer.send(
      Array.from({ length: n }, (_, i) => createJob(`rb-${i}`, s!.queue, t0 + Math.floor((i * 24_000) / n))),
    );
    await sleep(2_000);
    const c = await s.startScheduler(FAST_GROUP);
    await settled([a, b, c], [4, 4, 4], 'three schedulers own 4 partitions each');
    const three = await owners(s);
    const joined = moved(two, three);
    console.log(`join: partitions moved ${joined.join(',')} (${joined.length} of 12)`);
    // Only the newcomer's 4 moved; a and b kept 4 of theirs each, under their old epochs.
    expect(joined).toHaveLength(4);
    expect(joined.every((p) => three.get(p)!.owner === c.ownerId)).toBe(true);

    await sleep(3_000);
    await c.stop(); // leaves the group
    await settled([a, b], [6, 6], 'the two left own 6 partitions each again');
    const back = await owners(s);
    const left = moved(three, back);
    console.log(`leave: partitions moved ${left.join(',')} (${left.length} of 12)`);
    expect(left).toEqual(joined);

    await s.collector.waitFor(
      () => new Set(s!.collector.seen.map((d) => d.record.jobId)).size >= n,
      60_000,
      'every job across the join and the leave',
    );
    const seen = s.collector.seen.filter((d) => d.record.jobId.startsWith('rb-'));
    expect(new Set(seen.map((d) => d.record.jobId)).size).toBe(n); // 0 lost
    expect(seen).toHaveLength(n); // each once
    expect(seen.filter((d) => d.record.claimedAtMs < d.record.dueAtMs)).toEqual([]); // 0 early
    // The takeover holds of the moved partitions (commands still unapplied at their takeover).
    const holds = [a, b, c]
      .flatMap((p) => p.output().split('\n'))
      .filter((l) => l.includes('takeover hold ended'))
      .map((l) => (JSON.parse(l) as { heldMs: number; why: string }).heldMs);
    console.log(
      `join and leave under load: ${claimLateness(seen)}; takeover holds ${holds.length ? holds.join(', ') + ' ms' : 'none'}`,
    );
  });

  it('a member cut off from the group (SIGSTOP past its session) comes back and takes up partitions afresh', async () => {
    s = await Scenario.create('comeback', 4);
    const a = await s.startScheduler(FAST_GROUP);
    await settled([a], [4], 'a owns all 4');
    a.signal('SIGSTOP');
    const b = await s.startScheduler(FAST_GROUP);
    await settled([b], [4], 'b takes all 4 once a is out of the group');
    a.signal('SIGCONT');
    // a's firing rounds hit the fence and let its partitions go; it rejoins under a new member id.
    // b got its partitions later than a did, so b keeps 2 and hands 2 over: a sets those up afresh
    // (new epoch) instead of believing it had kept its old ones.
    await settled([a, b], [2, 2], 'a and b own 2 partitions each, by their own count');
    const o = await owners(s);
    expect([...o.values()].filter((x) => x.owner === a.ownerId)).toHaveLength(2);
    expect([...o.values()].filter((x) => x.owner === b.ownerId)).toHaveLength(2);
    // And every partition fires.
    const n = 200;
    const t0 = Date.now() + 1_000;
    await s.producer.send(Array.from({ length: n }, (_, i) => createJob(`cb-${i}`, s!.queue, t0 + i * 5)));
    await s.collector.waitFor(
      () => new Set(s!.collector.seen.map((d) => d.record.jobId)).size >= n,
      30_000,
      'every job after the comeback',
    );
  });
});

describe('a partition the scheduler let go of while the group still assigns it to it', () => {
  let s: Scenario | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('is taken up again a session later (fresh epoch, wheel reloaded) and its jobs fire', async () => {
    s = await Scenario.create('retake', 2);
    const a = await s.startScheduler(FAST_GROUP);
    await settled([a], [2], 'a owns both partitions');
    const n = 100;
    const t0 = Date.now() + 6_000;
    await s.producer.send(Array.from({ length: n }, (_, i) => createJob(`rt-${i}`, s!.queue, t0 + i * 20)));
    await until('the jobs are applied', 20_000, async () => {
      const { rows } = await s!.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM job');
      return rows[0]!.n === n;
    });
    // Someone else bumps both epochs (an operator, an owner the group has forgotten): a's next
    // writes are refused by the fence and it lets both partitions go, while Kafka still assigns
    // them to it and no command comes to make it notice.
    const before = await owners(s);
    await s.db.pool.query('UPDATE partition_owner SET epoch = epoch + 1');
    expect(s.collector.seen).toHaveLength(0); // none due yet
    await until('a is fenced', 20_000, async () => (await a.metric('sched_fenced_writes_total')) > 0);
    await s.collector.waitFor(
      () => new Set(s!.collector.seen.map((d) => d.record.jobId)).size >= n,
      40_000,
      'every job, once a took its partitions up again',
    );
    const after = await owners(s);
    for (const [p, o] of after) {
      expect(o.owner).toBe(a.ownerId);
      expect(o.epoch).toBe(before.get(p)!.epoch + 2); // the bump above, then a's own
    }
    expect(await a.metric('sched_partitions_owned')).toBe(2);
    // Per-shard observability: claims per partition add up; each owned partition says since when.
    expect(await a.metric('sched_partition_jobs_claimed_total')).toBe(n);
    expect(await a.metric('sched_jobs_claimed_total')).toBe(n);
    const since = (await a.metrics())
      .split('\n')
      .filter((l) => l.startsWith('sched_partition_owned_since_timestamp_seconds{'))
      .map((l) => Number(l.split(' ')[1]));
    expect(since).toHaveLength(2);
    for (const t of since) expect(Date.now() / 1000 - t).toBeLessThan(60);
  });
});
