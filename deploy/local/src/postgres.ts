import { execFileSync, spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { CDC_HEARTBEAT_TABLE } from '@sched/store';
import { StackError } from './errors.js';
import { tailFile } from './log-files.js';
import { findOnPath } from './distributions.js';
import { isAlive, logFile } from './processes.js';
import { STACK_DB, ownDatabaseUrl, type Env, type StackSettings } from './settings.js';
import { waitFor } from './wait.js';

/**
 * The stack's own Postgres cluster, made with the machine's PostgreSQL binaries: its own data
 * directory, its own port, `wal_level=logical`. The system instance is never touched.
 * As root, initdb and pg_ctl run as the `postgres` user (initdb refuses root).
 */

export interface PgBinaries {
  dir: string;
  major: number;
}

/** initdb, pg_ctl and postgres from SCHED_PG_BIN_DIR, the newest /usr/lib/postgresql/N/bin, or PATH. */
export function findPgBinaries(settings: StackSettings, env: Env): PgBinaries {
  const dirs: string[] = [];
  if (settings.pgBinDir) dirs.push(settings.pgBinDir);
  for (const root of ['/usr/lib/postgresql', '/usr/pgsql', '/opt/homebrew/opt', '/usr/local/opt']) {
    try {
      const versions = readdirSync(root)
        .filter((d) => /^(postgresql@)?\d+$/.test(d))
        .sort((a, b) => Number(b.replace(/\D/g, '')) - Number(a.replace(/\D/g, '')));
      for (const v of versions) dirs.push(join(root, v, 'bin'));
    } catch {
      // not on this system
    }
  }
  const onPath = findOnPath(env, 'pg_ctl');
  if (onPath) dirs.push(dirname(realpathSync(onPath)));
  for (const dir of dirs) {
    if (['initdb', 'pg_ctl', 'postgres'].every((b) => existsSync(join(dir, b)))) {
      const out = execFileSync(join(dir, 'pg_ctl'), ['--version'], { encoding: 'utf8', timeout: 10_000 });
      const major = Number(/(\d+)/.exec(out)?.[1] ?? 0);
      if (major >= 10) return { dir, major };
    }
  }
  throw new StackError(
    'SCHED_E_STACK_NO_POSTGRES',
    'no PostgreSQL server binaries (initdb, pg_ctl, postgres; version 10 or newer) were found',
    'install them (e.g. apt-get install postgresql-15, which puts them in /usr/lib/postgresql/15/bin), ' +
      'or set SCHED_PG_BIN_DIR=<dir with initdb>, or point DATABASE_URL at a Postgres with wal_level=logical',
  );
}

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a Postgres binary as the `postgres` user when we are root, else as ourselves. */
function runPg(
  bin: string,
  args: string[],
  cwd: string,
  timeoutMs: number,
): { status: number; output: string } {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const r = spawnSync(cmd, argv, {
    cwd,
    encoding: 'utf8',
    timeout: timeoutMs,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.error) return { status: 1, output: r.error.message };
  return { status: r.status ?? 1, output: `${r.stdout}${r.stderr}` };
}

function postgresOwner(): { uid: number; gid: number } | undefined {
  if (!isRoot()) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const parts = line?.split(':');
  if (!parts?.[2] || !parts[3]) {
    throw new StackError(
      'SCHED_E_STACK_NO_POSTGRES',
      'running as root, and there is no `postgres` user to run initdb and the server as (initdb refuses root)',
      'create the user (useradd --system postgres; the postgresql package does this), run as a non-root user, or set DATABASE_URL',
    );
  }
  return { uid: Number(parts[2]), gid: Number(parts[3]) };
}

export interface PgLayout {
  /** Directory owned by the server's user: `data/` and, when relocated, the log. */
  home: string;
  dataDir: string;
  logFile: string;
}

/**
 * Where the cluster lives: `<stateDir>/postgres`, unless the `postgres` user cannot reach the
 * state directory (a clone under /root, say); then under /var/tmp, with `logs/postgres.log` a link.
 * The choice is recorded in `<stateDir>/postgres-home`.
 */
export function pgLayout(settings: StackSettings): PgLayout {
  const record = join(settings.stateDir, 'postgres-home');
  let home = join(settings.stateDir, 'postgres');
  try {
    home = readFileSync(record, 'utf8').trim() || home;
  } catch {
    // default
  }
  const inState = home === join(settings.stateDir, 'postgres');
  return {
    home,
    dataDir: join(home, 'data'),
    logFile: inState ? logFile(settings.stateDir, 'postgres') : join(home, 'postgres.log'),
  };
}

function choosePgHome(settings: StackSettings, owner: { uid: number; gid: number } | undefined): PgLayout {
  const preferred = join(settings.stateDir, 'postgres');
  mkdirSync(preferred, { recursive: true, mode: 0o700 });
  mkdirSync(join(settings.stateDir, 'logs'), { recursive: true });
  if (owner) chownSync(preferred, owner.uid, owner.gid);
  // The server writes in its home and appends to logs/postgres.log (which we create and chown).
  const reachable =
    !owner ||
    spawnSync('runuser', [
      '-u',
      'postgres',
      '--',
      'test',
      '-w',
      preferred,
      '-a',
      '-x',
      join(settings.stateDir, 'logs'),
    ]).status === 0;
  if (!reachable && owner) {
    const home = `/var/tmp/sched-stack-postgres-${createHash('sha256').update(settings.stateDir).digest('hex').slice(0, 12)}`;
    mkdirSync(home, { recursive: true, mode: 0o700 });
    chownSync(home, owner.uid, owner.gid);
    writeFileSync(join(settings.stateDir, 'postgres-home'), `${home}\n`);
    const layout = pgLayout(settings);
    rmSync(logFile(settings.stateDir, 'postgres'), { force: true });
    symlinkSync(layout.logFile, logFile(settings.stateDir, 'postgres'));
    return layout;
  }
  return pgLayout(settings);
}

/** The postmaster's pid if our cluster runs (from `postmaster.pid`), else undefined. */
export function postgresPid(settings: StackSettings): number | undefined {
  try {
    const first = readFileSync(join(pgLayout(settings).dataDir, 'postmaster.pid'), 'utf8').split('\n')[0];
    const pid = Number(first);
    return Number.isSafeInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Settings written to `<data>/sched-stack.conf` (included from postgresql.conf) on every start. */
export function postgresConf(port: number): string {
  return `# Written by deploy/local on every start; edits are overwritten.
port = ${port}
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
# A slot nobody reads is invalidated after this much WAL rather than filling the disk.
max_slot_wal_keep_size = 4GB
max_connections = 200
shared_buffers = 256MB
effective_cache_size = 2GB
work_mem = 16MB
maintenance_work_mem = 128MB
wal_buffers = 16MB
min_wal_size = 256MB
max_wal_size = 2GB
checkpoint_completion_target = 0.9
random_page_cost = 1.1
# Durability is part of what the benchmarks measure: keep both on.
synchronous_commit = on
fsync = on
timezone = 'UTC'
log_line_prefix = '%m [%p] %q%u@%d '
# Per-statement time and calls for operators (CREATE EXTENSION pg_stat_statements to read them).
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = top
`;
}

/** Creates the cluster if needed and starts it; returns the postmaster pid. */
export async function startPostgres(
  settings: StackSettings,
  bin: PgBinaries,
  say: (l: string) => void,
): Promise<number> {
  const owner = postgresOwner();
  let layout = pgLayout(settings);
  if (!existsSync(join(layout.dataDir, 'PG_VERSION'))) {
    layout = choosePgHome(settings, owner);
    rmSync(layout.dataDir, { recursive: true, force: true });
    const pwfile = join(layout.home, '.pwfile');
    writeFileSync(pwfile, `${STACK_DB.password}\n`, { mode: 0o600 });
    if (owner) chownSync(pwfile, owner.uid, owner.gid);
    say(`postgres: initdb ${layout.dataDir}`);
    const r = runPg(
      join(bin.dir, 'initdb'),
      [
        '-D',
        layout.dataDir,
        '-U',
        STACK_DB.user,
        `--pwfile=${pwfile}`,
        '-A',
        'scram-sha-256',
        '--auth-local=trust',
        '-E',
        'UTF8',
        '--locale=C',
        '--no-instructions',
      ],
      layout.home,
      120_000,
    );
    rmSync(pwfile, { force: true });
    if (r.status !== 0) {
      throw new StackError(
        'SCHED_E_STACK_POSTGRES_FAILED',
        `initdb failed:\n${r.output.trim()}`,
        `fix the cause above, remove ${layout.dataDir} and run again`,
      );
    }
    const confPath = join(layout.dataDir, 'postgresql.conf');
    writeFileSync(confPath, `${readFileSync(confPath, 'utf8')}\ninclude_if_exists = 'sched-stack.conf'\n`);
  } else {
    const have = Number(readFileSync(join(layout.dataDir, 'PG_VERSION'), 'utf8').trim());
    if (have !== bin.major) {
      throw new StackError(
        'SCHED_E_STACK_BAD_STATE',
        `the stack's cluster in ${layout.dataDir} was made by PostgreSQL ${have}, but the binaries found are ${bin.major} (${bin.dir})`,
        `set SCHED_PG_BIN_DIR to PostgreSQL ${have}'s bin directory, or remove ${layout.home} (its data is lost) and run again`,
      );
    }
  }
  const conf = join(layout.dataDir, 'sched-stack.conf');
  writeFileSync(conf, postgresConf(settings.pgPort));
  if (!existsSync(layout.logFile)) writeFileSync(layout.logFile, '');
  if (owner) {
    chownSync(conf, owner.uid, owner.gid);
    chownSync(layout.logFile, owner.uid, owner.gid);
  }
  const r = runPg(
    join(bin.dir, 'pg_ctl'),
    ['-D', layout.dataDir, '-l', layout.logFile, '-w', '-t', '60', 'start'],
    layout.home,
    75_000,
  );
  if (r.status !== 0) {
    throw new StackError(
      'SCHED_E_STACK_POSTGRES_FAILED',
      `pg_ctl start failed:\n${r.output.trim()}\nLast lines of ${layout.logFile}:\n${tailFile(layout.logFile, 12)}`,
      `see ${layout.logFile}; if the port is the problem set SCHED_PG_PORT`,
    );
  }
  await waitFor(async () => ((await pgAnswers(ownDatabaseUrl(settings, 'postgres'))) ? true : undefined), {
    what: 'Postgres to accept connections',
    timeoutMs: 60_000,
    fix: `see ${layout.logFile}`,
  });
  const pid = postgresPid(settings);
  if (pid === undefined)
    throw new StackError(
      'SCHED_E_STACK_POSTGRES_FAILED',
      'Postgres started but postmaster.pid is missing',
      `see ${layout.logFile}`,
    );
  writeFileSync(join(settings.stateDir, 'pids', 'postgres.pid'), `${pid}\n`);
  return pid;
}

/** Creates `databases` on the server of `adminUrl` when missing. */
export async function ensureDatabases(adminUrl: string, databases: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    for (const db of databases) {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [db]);
      if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(db)}`);
    }
  } finally {
    await client.end();
  }
}

/** pg_ctl stop: fast (disconnects clients, clean checkpoint), immediate if that does not finish. */
export function stopPostgres(settings: StackSettings, bin: PgBinaries): 'stopped' | 'not running' {
  const layout = pgLayout(settings);
  if (postgresPid(settings) === undefined) return 'not running';
  const fast = runPg(
    join(bin.dir, 'pg_ctl'),
    ['-D', layout.dataDir, '-m', 'fast', '-w', '-t', '30', 'stop'],
    layout.home,
    40_000,
  );
  if (fast.status !== 0 && postgresPid(settings) !== undefined) {
    runPg(
      join(bin.dir, 'pg_ctl'),
      ['-D', layout.dataDir, '-m', 'immediate', '-w', '-t', '15', 'stop'],
      layout.home,
      20_000,
    );
  }
  rmSync(join(settings.stateDir, 'pids', 'postgres.pid'), { force: true });
  return 'stopped';
}

/** True if a `SELECT 1` succeeds within 3 s. */
export async function pgAnswers(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis: 3000,
    query_timeout: 3000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export interface SlotInfo {
  exists: boolean;
  active: boolean;
  /** The walsender reading the slot (changes when the reader reconnects). */
  activePid: number | undefined;
  /** WAL bytes between the server's current position and what the slot's reader confirmed. */
  lagBytes: number | undefined;
  walLevel: string;
  /** Seconds since Debezium's heartbeat action last rewrote `sched_cdc.heartbeat`; undefined: never. */
  heartbeatAgeS: number | undefined;
}

/** The replication slot's state (and the server's wal_level) on the database of `databaseUrl`. */
export async function slotInfo(databaseUrl: string, slot: string): Promise<SlotInfo> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis: 3000,
    query_timeout: 3000,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    const level = await client.query<{ wal_level: string }>('SHOW wal_level');
    const r = await client.query<{ active: boolean; active_pid: number | null; lag: string | null }>(
      `SELECT active, active_pid, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::text AS lag
         FROM pg_replication_slots WHERE slot_name = $1`,
      [slot],
    );
    const row = r.rows[0];
    // A beat that stops (the action query failing: Debezium only logs it) lets the slot fall
    // behind again while other databases write: `status` shows its age.
    const hasBeat = await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [
      CDC_HEARTBEAT_TABLE,
    ]);
    const beat = hasBeat.rows[0]?.t
      ? await client.query<{ age: number | null }>(
          `SELECT extract(epoch FROM now() - max(beat_at))::float8 AS age FROM ${CDC_HEARTBEAT_TABLE}`,
        )
      : undefined;
    return {
      heartbeatAgeS: beat?.rows[0]?.age ?? undefined,
      exists: row !== undefined,
      active: row?.active ?? false,
      activePid: row?.active_pid ?? undefined,
      lagBytes: row?.lag == null ? undefined : Number(row.lag),
      walLevel: level.rows[0]?.wal_level ?? 'unknown',
    };
  } finally {
    await client.end().catch(() => {});
  }
}

/** Drops the slot if it exists and nobody reads it; says what happened. */
export async function dropSlot(databaseUrl: string, slot: string): Promise<'dropped' | 'absent' | 'active'> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  await client.connect();
  try {
    const r = await client.query<{ active: boolean }>(
      'SELECT active FROM pg_replication_slots WHERE slot_name = $1',
      [slot],
    );
    const row = r.rows[0];
    if (!row) return 'absent';
    if (row.active) return 'active';
    await client.query('SELECT pg_drop_replication_slot($1)', [slot]);
    return 'dropped';
  } finally {
    await client.end().catch(() => {});
  }
}
