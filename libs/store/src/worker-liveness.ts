import type pg from 'pg';
import { MS_OF } from './sql-ms.js';

/** What a worker's beat found (see `workerBeat`). */
export interface WorkerBeat {
  /**
   * Database time until which this process counts as alive; null when the row is another
   * process's and this beat did not take it over (not a first beat: see `workerBeat`).
   */
  aliveUntilMs: number | null;
  /**
   * Another process was beating under this worker id (a restart under the same id, or a second
   * live process configured with it): its incarnation and until when it counted as alive. Null
   * when the row was this process's already, or new.
   */
  replaced: { incarnation: string; aliveUntilMs: number } | null;
}

/**
 * worker_beat: this process (`incarnation`) is alive for `ttlMs` more, by the database clock. A
 * process's first beat (`takeOver`, at its start, before any job) replaces the row of the process
 * before it under the same worker id and sets `started_at`, so that jobs the old process had
 * running are orphaned at once (see migration 013). A later beat that finds another process's row
 * changes nothing and says so (`aliveUntilMs` null, `replaced` set): two live processes configured
 * with one id then cost one take-over, at the second one's start, not one at every beat. One
 * statement, one row.
 */
export async function workerBeat(
  pool: pg.Pool | pg.ClientBase,
  workerId: string,
  incarnation: string,
  ttlMs: number,
  takeOver = true,
): Promise<WorkerBeat> {
  const { rows } = await pool.query<{
    alive_until_ms: number | null;
    old_incarnation: string | null;
    old_until_ms: number | null;
  }>({
    name: takeOver ? 'worker_beat_take_over' : 'worker_beat',
    text: `WITH
     -- The row as the statement's snapshot has it (not FOR UPDATE: the upsert below updates it in
     -- the same command, and a row locked by its own command would not be returned).
     old AS (SELECT incarnation, alive_until FROM worker_liveness WHERE worker_id = $1),
     up AS (
       INSERT INTO worker_liveness AS w (worker_id, incarnation, started_at, beat_at, alive_until)
       VALUES ($1, $2, now(), now(), now() + $3 * interval '1 millisecond')
       ON CONFLICT (worker_id) DO UPDATE SET
         incarnation = EXCLUDED.incarnation,
         started_at = CASE WHEN w.incarnation = EXCLUDED.incarnation THEN w.started_at ELSE now() END,
         replaced_at = CASE WHEN w.incarnation = EXCLUDED.incarnation THEN w.replaced_at ELSE now() END,
         beat_at = now(),
         alive_until = EXCLUDED.alive_until
       ${takeOver ? '' : 'WHERE w.incarnation = EXCLUDED.incarnation'}
       RETURNING w.alive_until)
     SELECT (SELECT ${MS_OF('up.alive_until')} FROM up) AS alive_until_ms,
            CASE WHEN old.incarnation <> $2 THEN old.incarnation::text END AS old_incarnation,
            CASE WHEN old.incarnation <> $2 THEN ${MS_OF('old.alive_until')} END AS old_until_ms
     FROM (SELECT 1) one LEFT JOIN old ON true`,
    values: [workerId, incarnation, ttlMs],
  });
  const r = rows[0]!;
  return {
    aliveUntilMs: r.alive_until_ms ?? null,
    replaced:
      r.old_incarnation === null ? null : { incarnation: r.old_incarnation, aliveUntilMs: r.old_until_ms! },
  };
}

/**
 * A worker stopping in good order: its row says it is gone from now on (only while it is still
 * this incarnation's), so whatever it left running is taken back at the reaper's next pass.
 */
export async function workerGone(
  pool: pg.Pool | pg.ClientBase,
  workerId: string,
  incarnation: string,
): Promise<void> {
  await pool.query(
    `UPDATE worker_liveness SET alive_until = least(alive_until, now()), beat_at = now()
     WHERE worker_id = $1 AND incarnation = $2`,
    [workerId, incarnation],
  );
}

/** A worker id whose RUNNING jobs may be orphaned (see `workersGone`). */
export interface GoneWorker {
  workerId: string;
  incarnation: string;
  /** The current incarnation's start: a job of this owner started before it is orphaned. */
  startedAtMs: number;
  aliveUntilMs: number;
  /** Whether the process stopped beating (else: it was replaced by a new one under its id). */
  dead: boolean;
}

/**
 * The worker ids whose jobs the reaper should look at: those whose process stopped beating within
 * the last `windowMs`, and those a new process took over within it (its predecessor's jobs are
 * orphaned). Older ones are left to the jobs' own leases. A small table: one row per worker id.
 */
export async function workersGone(pool: pg.Pool | pg.ClientBase, windowMs: number): Promise<GoneWorker[]> {
  const { rows } = await pool.query<{
    worker_id: string;
    incarnation: string;
    started_ms: number;
    until_ms: number;
    dead: boolean;
  }>({
    name: 'workers_gone',
    text: `SELECT worker_id, incarnation::text, ${MS_OF('started_at')} AS started_ms,
            ${MS_OF('alive_until')} AS until_ms, alive_until < now() AS dead
     FROM worker_liveness
     WHERE (alive_until < now() AND alive_until > now() - $1 * interval '1 millisecond')
        OR replaced_at > now() - $1 * interval '1 millisecond'
     ORDER BY worker_id`,
    values: [windowMs],
  });
  return rows.map((r) => ({
    workerId: r.worker_id,
    incarnation: r.incarnation,
    startedAtMs: r.started_ms,
    aliveUntilMs: r.until_ms,
    dead: r.dead,
  }));
}

/**
 * Every worker row (operators: `GET /v1/workers`), most recently beaten first, with the jobs each
 * holds RUNNING (one count over the running jobs: an operator's look, not for a hot loop).
 */
export async function workerList(pool: pg.Pool | pg.ClientBase): Promise<
  {
    workerId: string;
    incarnation: string;
    startedAtMs: number;
    beatAtMs: number;
    aliveUntilMs: number;
    alive: boolean;
    running: number;
  }[]
> {
  const { rows } = await pool.query<{
    worker_id: string;
    incarnation: string;
    started_ms: number;
    beat_ms: number;
    until_ms: number;
    alive: boolean;
    running: number;
  }>(
    `SELECT w.worker_id, w.incarnation::text, ${MS_OF('w.started_at')} AS started_ms, ${MS_OF('w.beat_at')} AS beat_ms,
            ${MS_OF('w.alive_until')} AS until_ms, w.alive_until >= now() AS alive, coalesce(r.n, 0) AS running
     FROM worker_liveness w
     LEFT JOIN (SELECT lease_owner, count(*)::int AS n FROM job WHERE phase = 1 AND state = 'RUNNING' GROUP BY lease_owner) r
       ON r.lease_owner = w.worker_id
     ORDER BY w.beat_at DESC LIMIT 1000`,
  );
  return rows.map((r) => ({
    workerId: r.worker_id,
    incarnation: r.incarnation,
    startedAtMs: r.started_ms,
    beatAtMs: r.beat_ms,
    aliveUntilMs: r.until_ms,
    alive: r.alive,
    running: r.running,
  }));
}
