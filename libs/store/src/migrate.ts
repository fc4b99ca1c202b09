import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

/** The logical-replication publication Debezium reads; holds every schema's `outbox` table. */
export const OUTBOX_PUBLICATION = 'sched_outbox';

/**
 * The one-row table Debezium's `heartbeat.action.query` rewrites every heartbeat, in the
 * publication too. Without a captured change now and then, the replication slot's confirmed
 * position stays where the last outbox row left it while other databases of the cluster write,
 * and the cluster keeps all that WAL (measured: 2.3 GB behind after a bench run).
 */
export const CDC_HEARTBEAT_SCHEMA = 'sched_cdc';
export const CDC_HEARTBEAT_TABLE = `${CDC_HEARTBEAT_SCHEMA}.heartbeat`;

export interface MigrateOptions {
  /** Target schema, created if missing. Default `public`. Tests use one schema each. */
  schema?: string;
  /**
   * Add `<schema>.outbox` to the `sched_outbox` publication (created if missing, inserts only),
   * so Debezium streams its rows. Default true. Only the table's rows: outbox records are logical
   * decoding messages since migration 014, and every schema's reach the slot whatever this says.
   */
  publishOutbox?: boolean;
}

export interface MigrateResult {
  schema: string;
  applied: string[];
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function assertSchemaName(schema: string): void {
  if (!SCHEMA_NAME.test(schema)) {
    throw Object.assign(new Error(`invalid schema name "${schema}": use lower-case letters, digits and _`), {
      code: 'SCHED_E_INVALID_SCHEMA',
      retriable: false,
    });
  }
}

/**
 * Applies the numbered `.sql` migrations that have not run yet in `schema`, each in its own
 * transaction, recording them in `<schema>.schema_migration`. Concurrent callers serialise on
 * an advisory lock, so two processes starting together apply each migration once.
 */
export async function migrate(databaseUrl: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const schema = options.schema ?? 'public';
  assertSchemaName(schema);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`sched.migrate.${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`SET search_path TO ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migration (
         name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = new Set(
      (await client.query<{ name: string }>('SELECT name FROM schema_migration')).rows.map((r) => r.name),
    );
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{3}_.+\.sql$/.test(f)).sort();
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = await readFile(MIGRATIONS_DIR + file, 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migration (name) VALUES ($1)', [file]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw Object.assign(
          new Error(`migration ${file} failed in schema ${schema}: ${(err as Error).message}`),
          {
            code: 'SCHED_E_MIGRATION_FAILED',
            retriable: false,
            cause: err,
          },
        );
      }
      applied.push(file);
    }
    if (options.publishOutbox ?? true) await publishOutbox(client, schema);
  } finally {
    await client
      .query('SELECT pg_advisory_unlock(hashtext($1))', [`sched.migrate.${schema}`])
      .catch(() => {});
    await client.end();
  }
  return { schema, applied };
}

async function publishOutbox(client: pg.Client, schema: string): Promise<void> {
  // Publication DDL is database-wide: serialise it across schemas too.
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['sched.publication']);
    await ensurePublished(client, schema);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

async function ensurePublished(client: pg.Client, schema: string): Promise<void> {
  const exists = await client.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [OUTBOX_PUBLICATION]);
  if (exists.rowCount === 0) {
    await client.query(`CREATE PUBLICATION ${OUTBOX_PUBLICATION} WITH (publish = 'insert')`);
  }
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${CDC_HEARTBEAT_SCHEMA}`);
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${CDC_HEARTBEAT_TABLE} (
       beat_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
       beat_at timestamptz NOT NULL DEFAULT now())`,
  );
  // A table of older code has no key: Debezium then logs a WARN ("Primary keys are not defined for
  // table 'heartbeat'") each time it reads the table's description, about once a minute. Altered only
  // when the key is missing: an ALTER would take the table's lock and invalidate its description.
  const keyed = await client.query('SELECT 1 FROM pg_index WHERE indrelid = $1::regclass AND indisprimary', [
    CDC_HEARTBEAT_TABLE,
  ]);
  if (keyed.rowCount === 0)
    await client.query(
      `ALTER TABLE ${CDC_HEARTBEAT_TABLE} ADD COLUMN IF NOT EXISTS beat_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY`,
    );
  await addToPublication(client, CDC_HEARTBEAT_SCHEMA, 'heartbeat');
  await addToPublication(client, schema, 'outbox');
}

async function addToPublication(client: pg.Client, schema: string, table: string): Promise<void> {
  const member = await client.query(
    'SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3',
    [OUTBOX_PUBLICATION, schema, table],
  );
  if (member.rowCount === 0) {
    await client.query(`ALTER PUBLICATION ${OUTBOX_PUBLICATION} ADD TABLE ${schema}.${table}`);
  }
}

/** Drops a schema made by `migrate` (tests), removing its outbox from the publication first. */
export async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  assertSchemaName(schema);
  if (schema === 'public') throw new Error('refusing to drop schema public');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}
