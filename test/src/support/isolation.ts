import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { createPool, dropSchema, migrate } from '@sched/store';

/** Stack endpoints for tests: the local stack's defaults, overridable like the apps' env. */
export function endpoints() {
  return {
    databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:55432/sched',
    kafkaBrokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
    registryUrl: process.env.SCHED_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
  };
}

/** A short unique suffix for schema, topic and group names of one test. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

export interface IsolatedSchema {
  schema: string;
  pool: pg.Pool;
  databaseUrl: string;
  drop(): Promise<void>;
}

/** A freshly migrated schema of its own (its outbox added to the Debezium publication). */
export async function isolatedSchema(prefix = 't'): Promise<IsolatedSchema> {
  const { databaseUrl } = endpoints();
  const schema = uniqueName(prefix).toLowerCase();
  await migrate(databaseUrl, { schema });
  const pool = createPool({ databaseUrl, schema, max: 8 });
  return {
    schema,
    pool,
    databaseUrl,
    async drop() {
      await pool.end();
      await dropSchema(databaseUrl, schema);
    },
  };
}
