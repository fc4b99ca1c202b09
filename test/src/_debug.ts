import { createJob, sleep } from './support/kafka.js';
import { Scenario } from './support/scenario.js';
const s = await Scenario.create('dbg');
const p = await s.startScheduler({ TEST_SCHEDULER_LOG_LEVEL: 'info' });
const n = 300;
const due = Date.now() + 2000;
await s.producer.send(Array.from({ length: n }, (_, i) => createJob(`d-${i}`, s.queue, due + (i % 50) * 10)));
await sleep(12000);
const { rows } = await s.db.pool.query('select state, partition, count(*) from job group by 1,2 order by 2');
console.log(rows, 'seen', s.collector.seen.length);
const o = await s.db.pool.query('select count(*) from outbox');
console.log('outbox', o.rows);
console.log(
  await p.metrics().then((t) =>
    t
      .split('\n')
      .filter((l) => l.startsWith('sched_') && !l.startsWith('sched_scheduling_lag_seconds_bucket'))
      .join('\n'),
  ),
);
console.log(p.output().slice(-3000));
await s.close();
process.exit(0);
