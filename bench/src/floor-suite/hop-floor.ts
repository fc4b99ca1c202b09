import { randomBytes } from 'node:crypto';
import * as hdr from 'hdr-histogram-js';
import pg from 'pg';
import { kafkajsPort } from '@sched/kafka';
import { createLogger } from '@sched/logging';
import { stackEndpoints } from '@sched/local-stack';

/*
 * The two hops every one of our dispatches must cross, each alone on this machine, at a steady
 * rate, measured against the intended send time (open loop): one durable Postgres commit (a
 * one-row insert, synchronous_commit on; the claim and the start are such commits) and one Kafka
 * hop (a produce with acks=all, through our Kafka port, to a consumer in a group with the worker's
 * 10 ms fetch wait). A dispatch crosses at least two commits, the WAL relay (Debezium) and one Kafka
 * hop, so its latency is above each of these.
 */

export interface HopFloor {
  readonly hop: 'postgres-commit' | 'kafka';
  readonly ratePerSec: number;
  readonly n: number;
  /** Microseconds, from the intended send time. */
  readonly latencyUs: { p50: number; p99: number; p999: number; max: number };
}

const usHistogram = () =>
  hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 60_000_000,
    numberOfSignificantValueDigits: 3,
  });

function figures(h: hdr.Histogram): HopFloor['latencyUs'] {
  return {
    p50: h.getValueAtPercentile(50),
    p99: h.getValueAtPercentile(99),
    p999: h.getValueAtPercentile(99.9),
    max: h.maxValue,
  };
}

const nowUs = () => (performance.timeOrigin + performance.now()) * 1000;

/** Calls `op(i, intendedUs)` n times at `rate` per second, on schedule, without waiting for each. */
async function paced(n: number, rate: number, op: (i: number, intendedUs: number) => void): Promise<void> {
  const t0 = nowUs() + 50_000;
  for (let i = 0; i < n; i++) {
    const at = t0 + (i * 1e6) / rate;
    const waitMs = (at - nowUs()) / 1000;
    if (waitMs > 1) await new Promise((r) => setTimeout(r, waitMs));
    op(i, at);
  }
}

export async function postgresCommitFloor(n: number, rate: number): Promise<HopFloor> {
  const { databaseUrl } = stackEndpoints();
  const schema = `bench_floor_${randomBytes(3).toString('hex')}`;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 16 });
  const h = usHistogram();
  try {
    await pool.query(
      `CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.probe (i int PRIMARY KEY, at timestamptz)`,
    );
    // Warm every connection and the plan first.
    await Promise.all(
      Array.from({ length: 16 }, (_, k) =>
        pool.query(`INSERT INTO ${schema}.probe VALUES ($1, now())`, [-1 - k]),
      ),
    );
    const pending: Promise<void>[] = [];
    await paced(n, rate, (i, at) => {
      pending.push(
        pool.query(`INSERT INTO ${schema}.probe VALUES ($1, now())`, [i]).then(() => {
          h.recordValue(Math.max(1, Math.round(nowUs() - at)));
        }),
      );
    });
    await Promise.all(pending);
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await pool.end();
  }
  return { hop: 'postgres-commit', ratePerSec: rate, n, latencyUs: figures(h) };
}

export async function kafkaHopFloor(n: number, rate: number): Promise<HopFloor> {
  const { kafkaBrokers } = stackEndpoints();
  const log = createLogger('bench-floor', { level: 'warn' });
  const kafka = kafkajsPort({ clientId: 'bench-floor', brokers: kafkaBrokers, logger: log });
  const topic = `bench-floor-${randomBytes(3).toString('hex')}`;
  const admin = await kafka.admin();
  await admin.ensureTopics([{ topic, partitions: 1 }]);
  const producer = await kafka.producer({ idempotent: true });
  const h = usHistogram();
  let got = 0;
  const sentAt = new Float64Array(n);
  const consumer = kafka.groupConsumer(
    { groupId: topic, topics: [topic], maxWaitTimeMs: 10, fromBeginning: true },
    {
      onBatch: async (batch) => {
        const t = nowUs();
        for (const m of batch.messages) {
          const i = Number(m.value?.toString() ?? -1);
          if (i >= 0 && i < n) {
            h.recordValue(Math.max(1, Math.round(t - sentAt[i]!)));
            got++;
          }
        }
        return Promise.resolve();
      },
    },
  );
  try {
    await consumer.start();
    // Until the consumer has joined and fetches: a probe message goes through first.
    await producer.send(topic, [{ value: '-1' }]);
    await new Promise((r) => setTimeout(r, 3_000));
    const sends: Promise<void>[] = [];
    await paced(n, rate, (i, at) => {
      sentAt[i] = at;
      sends.push(producer.send(topic, [{ value: String(i) }]));
    });
    await Promise.all(sends);
    const deadline = Date.now() + 30_000;
    while (got < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  } finally {
    await consumer.stop();
    await producer.disconnect();
    await admin.disconnect();
  }
  if (got < n) throw new Error(`kafka floor: ${got} of ${n} messages came back within 30 s`);
  return { hop: 'kafka', ratePerSec: rate, n, latencyUs: figures(h) };
}
