import { createJob, sleep } from './support/kafka.js';
import { Scenario } from './support/scenario.js';
const s = await Scenario.create('dbg', 2);
await s.startScheduler({});
const w = await s.startWorker({ TEST_APP_LOG_LEVEL: 'info' } as Record<string, string>);
await s.producer.send([createJob('x-1', s.queue, Date.now() + 300, { payload: Buffer.from('{}') })]);
await sleep(8000);
console.log('seen', s.collector.seen.length, await s.jobStates(), await s.executions());
console.log(
  (await w.metrics())
    .split('\n')
    .filter((l) => l.startsWith('sched_worker') && !l.includes('bucket'))
    .join('\n'),
);
console.log(w.output().slice(-3000));
await s.close();
process.exit(0);
