import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, stackStatus, stopService } from '@sched/local-stack';
import { createJob, sleep } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// Restarts the shared broker and Connect: integration files run one at a time, and this one
// leaves the stack healthy behind it.
describe('scheduler across Kafka broker and Kafka Connect restarts', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await Scenario.create('rst', 4);
    await s.startScheduler();
  });
  afterAll(async () => {
    const st = await stackStatus({ say: (l) => console.log(`[stack] ${l}`) });
    for (const svc of st.services)
      if (!svc.healthy) await startService(svc.name, { say: (l) => console.log(`[stack] ${l}`) });
    await s?.close();
  });

  it('loses nothing and dispatch resumes', async () => {
    const n = 2_000;
    const t0 = Date.now() + 1_000;
    await s.producer.send(
      Array.from({ length: n }, (_, i) => createJob(`r-${i}`, s.queue, t0 + Math.floor((i * 60_000) / n))),
    );
    await sleep(6_000);
    await stopService('kafka', { say: (l) => console.log(`[stack] ${l}`) });
    await sleep(4_000);
    await startService('kafka', { say: (l) => console.log(`[stack] ${l}`) });
    await sleep(6_000);
    await stopService('connect', { say: (l) => console.log(`[stack] ${l}`) });
    await sleep(4_000);
    await startService('connect', { say: (l) => console.log(`[stack] ${l}`) });
    // Jobs created once both are back, due a few seconds later (whatever the restarts took): they
    // must go out on time, so dispatch resumed rather than only drained its backlog.
    const after = 200;
    const t1 = Date.now() + 5_000;
    await s.producer.send(
      Array.from({ length: after }, (_, i) =>
        createJob(`a-${i}`, s.queue, t1 + Math.floor((i * 10_000) / after)),
      ),
    );

    await s.explained(() =>
      s.collector.waitFor(
        () => new Set(s.collector.seen.map((d) => d.record.jobId)).size >= n + after,
        120_000,
        'every job after restarts',
      ),
    );
    const ids = s.collector.seen.map((d) => d.record.jobId);
    expect(new Set(ids).size).toBe(n + after); // 0 lost
    expect(s.collector.seen.filter((d) => d.record.claimedAtMs < d.record.dueAtMs)).toEqual([]);
    const late = s.collector.seen.filter(
      (d) => d.record.jobId.startsWith('a-') && d.receivedAtMs - d.record.dueAtMs >= 2_000,
    );
    expect(late.map((d) => `${d.record.jobId} ${d.receivedAtMs - d.record.dueAtMs} ms late`)).toEqual([]);
    // Exported, whether or not kafkajs gave up on the consumer during the restarts.
    const restarts = /^sched_consumer_restarts(?:\{[^}]*\})? (\d+)$/m.exec(await s.schedulers[0]!.metrics());
    expect(restarts).not.toBeNull();
    console.log(
      `restarts: ${n + after} jobs, ${ids.length - new Set(ids).size} duplicate dispatch records (at-least-once), consumer restarts ${restarts![1]}`,
    );
  });
});
