import { describe, expect, it } from 'vitest';
import { StartHub } from '../../bench/src/e2e/start-log.js';
import { oursFactory } from '../../bench/src/e2e/systems/ours.js';

// The e2e bench's figure for the scheduler issue, due → dispatch record on Kafka, comes from the
// broker's append time in each record, read by the bench's tap. The tap reads after the workload
// (not on the cores the run is measuring) and must still give every dispatched job its time.
describe("bench: ours' dispatch tap on the real stack", () => {
  it('reads nothing while the workload runs, then every dispatched job when the evidence is asked for', async () => {
    const hub = new StartHub();
    const factory = oursFactory(hub);
    const session = await factory.open();
    try {
      const N = 300;
      const t = Date.now() + 5_000;
      const due = new Float64Array(N);
      for (let i = 0; i < N; i++) due[i] = t + (i % 1_000);
      const log = hub.open(due);
      await session.createBatched(log, 0, N);
      expect(await log.waitAll(t + 90_000)).toBe(true);
      expect(log.early).toBe(0);
      // Every job started, and the tap has not fetched a record yet.
      expect(log.kafkaTs.every((v) => Number.isNaN(v))).toBe(true);

      const evidence = await session.evidence!(log, () => true);
      const onKafka = evidence['due→on kafka (broker append time)'] as { count: number };
      expect(onKafka.count).toBe(N);
      // The broker's append time: after the claim (database time) and before the handler started.
      for (let i = 0; i < N; i++) {
        expect(log.kafkaTs[i]!).toBeGreaterThanOrEqual(log.claim[i]! - 50);
        expect(log.kafkaTs[i]!).toBeLessThanOrEqual(log.first[i]! + 50);
      }
      hub.close(log);
    } finally {
      await session.close();
      await factory.shutdown();
    }
  });
});
