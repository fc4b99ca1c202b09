import pg from 'pg';
import { assertSchemaName } from './migrate.js';

// int8 → number: our int8 values (epochs, offsets, ms) stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export interface PoolOptions {
  databaseUrl: string;
  /** Schema holding the tables (search_path). Default `public`. */
  schema?: string;
  max?: number;
  applicationName?: string;
}

/** A pg pool whose connections resolve unqualified table names in `schema`. */
export function createPool(options: PoolOptions): pg.Pool {
  const schema = options.schema ?? 'public';
  assertSchemaName(schema);
  return new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.max ?? 8,
    options: `-c search_path=${schema}`,
    application_name: options.applicationName ?? 'sched',
    idleTimeoutMillis: 30_000,
  });
}

/** Runs `work` in one transaction on one pooled connection. */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
