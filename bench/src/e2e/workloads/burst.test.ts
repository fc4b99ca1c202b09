import { describe, expect, it } from 'vitest';
import { StartHub } from '../start-log.js';
import { onKafkaFigures } from './burst.js';

describe('e2e burst: on-Kafka figures of a repetition', () => {
  it('gives the last append after T and the worst due → on Kafka of one job', () => {
    const hub = new StartHub();
    const t = 1_000_000;
    const log = hub.open(Float64Array.from([t, t + 500, t + 900]));
    log.recordKafka(0, t + 4_000, t + 3_000); // 3,000 ms late
    log.recordKafka(1, t + 4_000, t + 3_600); // 3,100 ms late
    log.recordKafka(2, t + 4_000, t + 3_500); // last due, not the last on Kafka
    expect(onKafkaFigures(log, t)).toEqual({ allOnKafkaMs: 3_600, onKafkaLagMaxMs: 3_100 });
    hub.close(log);
  });

  it('is NaN while some dispatch record was never seen', () => {
    const hub = new StartHub();
    const log = hub.open(Float64Array.from([10, 20]));
    log.recordKafka(0, 30, 25);
    const f = onKafkaFigures(log, 0);
    expect(f.allOnKafkaMs).toBeNaN();
    expect(f.onKafkaLagMaxMs).toBeNaN();
    hub.close(log);
  });
});
