import type pg from 'pg';
import { createPool, dropSchema, migrate } from '@sched/store';
import { endpoints, uniqueName } from './isolation.js';
import { Collector, ensureTopics } from './kafka.js';

/** A migrated schema of its own and a collector on the given dispatch topics (outbox record tests). */
export interface RecordSuite {
  schema: string;
  pool: pg.Pool;
  collector: Collector;
  close(): Promise<void>;
}

export async function openRecordSuite(prefix: string, topics: string[]): Promise<RecordSuite> {
  const { databaseUrl } = endpoints();
  const schema = uniqueName(prefix).toLowerCase();
  await ensureTopics(topics.map((topic) => ({ topic, partitions: 3 })));
  const collector = await new Collector(topics, false).start();
  await migrate(databaseUrl, { schema, publishOutbox: false });
  const pool = createPool({ databaseUrl, schema, max: 2 });
  return {
    schema,
    pool,
    collector,
    async close() {
      await collector.stop();
      await pool.end();
      await dropSchema(databaseUrl, schema);
    },
  };
}
