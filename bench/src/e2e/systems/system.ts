import type { StartLog } from '../start-log.js';

export const SYSTEMS = ['ours', 'pg-boss', 'bullmq'] as const;
export type SystemName = (typeof SYSTEMS)[number];

export type RecoveryTarget = 'scheduler' | 'worker';

/** Batched creation: jobs per create call, and calls in flight. The same for every system. */
export const CREATE_BATCH = 2_000;
export const CREATE_BATCHES_IN_FLIGHT = 2;

export interface DbCounters {
  walBytes: number;
  commits: number;
}

/** SQL for DbCounters, run in the system's database. */
export const DB_COUNTERS_SQL = `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8 AS wal,
  (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::float8 AS commits`;

export interface Footprint {
  /** The figure compared across systems: bytes of the store that holds pending jobs. */
  storeBytes: number;
  /** What it is made of (table, index, RSS, …), for the report. */
  detail: Record<string, number>;
}

/**
 * One system brought up for one workload: its own queue (and, for ours, schema and topics), its
 * own worker process (and, for ours, scheduler process), all reporting handler starts to the
 * bench's StartHub. Jobs are numbered within a StartLog; their due times come from `log.due`.
 */
export interface SystemSession {
  readonly system: SystemName;
  /** Root pids per process group, for CPU windows. */
  cpuGroups(): Record<string, number[]>;
  /** Creates jobs [from, to) of `log` in batches; resolves once the system durably accepted them. */
  createBatched(log: StartLog, from: number, to: number): Promise<void>;
  /** Creates jobs [from, to) one per call with `concurrency` calls in flight. */
  createSingle(log: StartLog, from: number, to: number, concurrency: number): Promise<void>;
  /**
   * Creates acknowledged but not yet committed to the scheduler's store (ours: commands on Kafka
   * the scheduler has not applied to Postgres yet, i.e. its consumer-group lag). Undefined for the
   * peers, whose acknowledgement is the commit.
   */
  uncommitted?(): Promise<number>;
  footprint(): Promise<Footprint>;
  /** Entries in the scheduler's in-memory index (ours: the wheels' size); undefined for the peers. */
  wheelEntries?(): Promise<number>;
  /**
   * Postgres work counters (systems on Postgres): WAL bytes written (cluster-wide) and transactions
   * committed in the system's database, so a workload can report them per job.
   */
  dbCounters?(): Promise<DbCounters>;
  /** kill -9 the target process and start a fresh one at once (as a supervisor would). */
  kill9AndRestart(target: RecoveryTarget): Promise<{ killedAtMs: number; readyAtMs: number }>;
  /**
   * Of the given log indexes (jobs whose start was never reported), how many the system's own
   * store shows as started (ours: an attempt row). A worker killed mid-report loses its last start
   * reports; this tells those jobs from lost ones.
   */
  ranPerStore?(log: StartLog, indexes: number[]): Promise<number>;
  /** Extra per-system evidence for a finished log (ours: hop breakdown). */
  evidence?(log: StartLog, include: (i: number) => boolean): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface SystemFactory {
  readonly system: SystemName;
  /** Processes recovery kills: the scheduler (ours) and the worker. */
  readonly recoveryTargets: readonly RecoveryTarget[];
  /** Versions and knobs, for the report. */
  describe(): Promise<{ versions: Record<string, string>; knobs: Record<string, string | number> }>;
  open(): Promise<SystemSession>;
  /** Releases what lives across sessions (pools, servers). */
  shutdown(): Promise<void>;
}

/** Runs `work(k)` for k in [from, to) stepping by `step`, with at most `inFlight` running. */
export async function inBatches(
  from: number,
  to: number,
  step: number,
  inFlight: number,
  work: (lo: number, hi: number) => Promise<void>,
): Promise<void> {
  let next = from;
  const lane = async () => {
    while (next < to) {
      const lo = next;
      const hi = Math.min(to, lo + step);
      next = hi;
      await work(lo, hi);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, inFlight) }, lane));
}
