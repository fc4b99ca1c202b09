import type { WarmUp } from './workloads/warm-up.js';

/**
 * Workload sizes and the repetition plan. `full` follows the issue (100,000-job delayed and burst
 * sets, 200,000-job ingest, ≥ 60 s drain, 1M pending) within a 45-minute budget; `quick` is the
 * same program at a size that runs in under 5 minutes, for development only (1 repetition).
 */
export interface Plan {
  mode: 'quick' | 'full';
  reps: number;
  /**
   * Seconds each workload may take per system before it stops starting new repetitions (it always
   * runs one). Together they bound the whole run: the full plan's sum is its 45-minute budget.
   */
  budgetS: Record<'delayed' | 'burst' | 'ingest' | 'drain' | 'pending' | 'recovery', number>;
  /**
   * Run through each system before its first workload, unmeasured (see workloads/warm-up.ts); it
   * is outside the budgets above (20–50 s a system on this machine's hosts).
   */
  warmUp: WarmUp;
  delayed: {
    jobs: number;
    windowMs: number;
    leadMs: number;
    warmupMs: number;
    tailMs: number;
  };
  burst: { jobs: number; leadMs: number; capMs: number };
  ingest: {
    batchedJobs: number;
    singleJobs: number;
    singleConcurrency: number;
    singleCapMs: number;
    commitCapMs: number;
  };
  drain: {
    startRate: number;
    growth: number;
    maxRate: number;
    maxSteps: number;
    stepMs: number;
    confirmMs: number;
    confirmWarmupMs: number;
    confirmReps: number;
    /** Steps between the last rate held and the first that failed (geometric midpoints). */
    refineSteps: number;
    /** Longest wait for a step's leftover backlog before the next step (unmeasured). */
    leftoverMs: number;
    /** Set (`--drain-rate`): no ramp, the confirm runs at this rate and does not step down. */
    fixedRate?: number;
  };
  pending: {
    jobs: number;
    fromMs: number;
    spanMs: number;
    loadCapMs: number;
    probeRate: number;
    probeMs: number;
  };
  recovery: {
    rate: number;
    durationMs: number;
    killAtMs: number;
    graceMs: number;
    reps: number;
    allTargets: boolean;
    /**
     * Before a scheduler is killed, this many jobs are created due between `pendingFromMs` and
     * `pendingFromMs + pendingSpanMs` from then: inside the wheel's horizon, so the killed owner held
     * them all in memory and the new one must load them again (the scheduler issue's "after kill -9
     * with 1M pending"). 0: none.
     */
    pendingJobs: number;
    pendingFromMs: number;
    pendingSpanMs: number;
    /** The load (creates acked and committed by the scheduler) gives up after this long. */
    pendingLoadCapMs: number;
  };
}

export const FULL: Plan = {
  mode: 'full',
  reps: 3,
  budgetS: { delayed: 360, burst: 100, ingest: 90, drain: 170, pending: 150, recovery: 220 },
  warmUp: { jobs: 100_000, spanMs: 10_000, leadMs: 5_000, capMs: 90_000 },
  delayed: {
    jobs: 100_000,
    windowMs: 100_000,
    leadMs: 10_000,
    warmupMs: 10_000,
    tailMs: 10_000,
  },
  burst: { jobs: 100_000, leadMs: 15_000, capMs: 40_000 },
  ingest: {
    batchedJobs: 200_000,
    singleJobs: 200_000,
    singleConcurrency: 64,
    singleCapMs: 12_000,
    commitCapMs: 60_000,
  },
  drain: {
    startRate: 250,
    growth: 1.6,
    maxRate: 40_000,
    maxSteps: 11,
    stepMs: 6_000,
    confirmMs: 60_000,
    confirmWarmupMs: 5_000,
    confirmReps: 1,
    refineSteps: 2,
    leftoverMs: 15_000,
  },
  pending: {
    jobs: 1_000_000,
    fromMs: 3600_000,
    spanMs: 24 * 3600_000,
    loadCapMs: 240_000,
    probeRate: 500,
    probeMs: 8_000,
  },
  recovery: {
    rate: 1_000,
    durationMs: 25_000,
    killAtMs: 8_000,
    graceMs: 32_000,
    reps: 1,
    allTargets: true,
    pendingJobs: 1_000_000,
    pendingFromMs: 240_000,
    pendingSpanMs: 300_000,
    pendingLoadCapMs: 120_000,
  },
};

export const QUICK: Plan = {
  mode: 'quick',
  reps: 1,
  budgetS: { delayed: 25, burst: 25, ingest: 15, drain: 30, pending: 20, recovery: 40 },
  warmUp: { jobs: 2_000, spanMs: 1_000, leadMs: 2_000, capMs: 10_000 },
  delayed: {
    jobs: 6_000,
    windowMs: 6_000,
    leadMs: 4_000,
    warmupMs: 1_000,
    tailMs: 3_000,
  },
  burst: { jobs: 8_000, leadMs: 4_000, capMs: 6_000 },
  ingest: {
    batchedJobs: 20_000,
    singleJobs: 5_000,
    singleConcurrency: 64,
    singleCapMs: 4_000,
    commitCapMs: 15_000,
  },
  drain: {
    startRate: 250,
    growth: 4,
    maxRate: 16_000,
    maxSteps: 3,
    stepMs: 2_500,
    confirmMs: 4_000,
    confirmWarmupMs: 1_000,
    confirmReps: 1,
    refineSteps: 1,
    leftoverMs: 3_000,
  },
  pending: {
    jobs: 50_000,
    fromMs: 3600_000,
    spanMs: 24 * 3600_000,
    loadCapMs: 30_000,
    probeRate: 500,
    probeMs: 3_000,
  },
  recovery: {
    rate: 500,
    // The stream must outlast a scheduler's failover (its group session, and reloading its wheel).
    durationMs: 12_000,
    killAtMs: 3_000,
    graceMs: 6_000,
    reps: 1,
    allTargets: false,
    pendingJobs: 20_000,
    pendingFromMs: 240_000,
    pendingSpanMs: 300_000,
    pendingLoadCapMs: 30_000,
  },
};
