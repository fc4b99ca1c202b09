import { afterAll, beforeAll } from 'vitest';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { stackEndpoints } from '@sched/local-stack';
import { createPool, dropSchema, migrate } from '@sched/store';

/** Stack endpoints for tests: those of the local stack (its env overrides apply). */
export function endpoints() {
  const ep = stackEndpoints();
  return { databaseUrl: ep.databaseUrl, kafkaBrokers: ep.kafkaBrokers, registryUrl: ep.registryUrl };
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

/**
 * A schema of its own for the enclosing `describe`: migrated before its tests, dropped after them.
 * Returns an accessor (the schema exists only once `beforeAll` has run).
 */
export function schemaForSuite(prefix: string): () => IsolatedSchema {
  let db: IsolatedSchema | undefined;
  beforeAll(async () => {
    db = await isolatedSchema(prefix);
  });
  afterAll(async () => {
    await db?.drop();
  });
  return () => {
    if (!db) throw new Error(`schema for ${prefix} not created yet (use it inside a test)`);
    return db;
  };
}
