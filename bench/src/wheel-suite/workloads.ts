import { jobId, seededRandom } from './job-ids';

/** What a due-time index returns from `advance`: valid until its next call. */
export interface ExpiredView {
  readonly length: number;
  readonly ids: readonly string[];
  readonly dueMs: Float64Array;
}

/** The operations the workloads drive, implemented by the wheel and by the heap baseline. */
export interface TimerIndex {
  readonly name: string;
  readonly size: number;
  add(id: string, dueMs: number): void;
  cancelById(id: string): boolean;
  advance(nowMs: number, maxBatch: number): ExpiredView;
  /** Bulk add, when the implementation has one. */
  load?(entries: readonly { id: string; dueMs: number }[]): void;
  /** Batch cancel by id, when the implementation has one; returns how many were pending. */
  cancelManyById?(ids: readonly string[]): number;
}

export interface WorkloadConfig {
  /** Pending timers. */
  readonly n: number;
  /** Operations in the mixed workload (50% add, 25% cancel, 25% advance). */
  readonly mixedOps: number;
  readonly seed: number;
  readonly startMs: number;
  /** Due times are spread uniformly over this many ms after startMs. */
  readonly spreadMs: number;
  /** maxBatch of every advance call. */
  readonly maxBatch: number;
  /**
   * The expire phase stops after this many expirations (Infinity: drain everything and check that
   * nothing was lost). A full drain of the heap at 10M takes minutes; its rate is steady long before.
   */
  readonly expireLimit: number;
}

export interface Figures {
  readonly impl: string;
  readonly n: number;
  readonly insertPerSec: number;
  readonly cancelPerSec: number;
  readonly expirePerSec: number;
  readonly mixedOpsPerSec: number;
  /** (V8 heap + ArrayBuffers) after GC with n pending, minus before, over n: includes the id index. */
  readonly bytesPerTimer: number;
  /** Longest single advance call, wall clock, over the mixed and expire phases. */
  readonly maxAdvanceMs: number;
  /** Entries returned before their due time (must be 0). */
  readonly early: number;
  /** Entries returned after a later-due one within the final drain (must be 0). */
  readonly outOfOrder: number;
  /** Pending entries that the final drain did not return (must be 0; only counted on a full drain). */
  readonly lost: number;
  /** Entries returned by the expire phase (all pending ones unless `expireLimit` cut it short). */
  readonly expired: number;
  readonly [extra: string]: number | string;
}

/** Ids are generated outside the timed loops, this many at a time. */
const CHUNK = 65_536;

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined)
    throw new Error('the wheel suite needs node --expose-gc (run it through bench/src/main.ts)');
  collect();
  collect();
}

function heapAndBuffers(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** CPU time of this process (all threads) in ms: the figures' denominator on a machine shared with other work. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1_000;
}

function coprimeStride(n: number): number {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  let stride = 7_368_787;
  while (gcd(stride, n) !== 1) stride += 2;
  return stride;
}

/**
 * Bulk load of n timers into a fresh index, CHUNK per call (the same timers as the insert phase); then,
 * when the index has a batch cancel, cancel n/10 of them with it, CHUNK ids per call (the same ids, in
 * the same order, as the cancel phase).
 */
function measureBulk(
  make: () => TimerIndex,
  cfg: WorkloadConfig,
): { loadPerSec?: number; cancelManyPerSec?: number } {
  const index = make();
  if (index.load === undefined) return {};
  const rnd = seededRandom(cfg.seed);
  let loadMs = 0;
  for (let base = 0; base < cfg.n; base += CHUNK) {
    const m = Math.min(CHUNK, cfg.n - base);
    const entries = Array.from({ length: m }, (_, i) => ({
      id: jobId(base + i),
      dueMs: cfg.startMs + 1 + Math.floor(rnd() * cfg.spreadMs),
    }));
    const t = performance.now();
    index.load(entries);
    loadMs += performance.now() - t;
  }
  if (index.size !== cfg.n) throw new Error(`${index.name}: loaded ${index.size} of ${cfg.n} timers`);
  const loadPerSec = Math.round(cfg.n / (loadMs / 1_000));
  if (index.cancelManyById === undefined) return { loadPerSec };
  const cancels = Math.floor(cfg.n / 10);
  const stride = coprimeStride(cfg.n);
  let cancelMs = 0;
  let hits = 0;
  for (let base = 0; base < cancels; base += CHUNK) {
    const ids = Array.from({ length: Math.min(CHUNK, cancels - base) }, (_, i) =>
      jobId(((base + i) * stride) % cfg.n),
    );
    const t = performance.now();
    hits += index.cancelManyById(ids);
    cancelMs += performance.now() - t;
  }
  if (hits !== cancels)
    throw new Error(`${index.name}: batch-cancelled ${hits} of ${cancels} pending timers`);
  return { loadPerSec, cancelManyPerSec: Math.round(cancels / (cancelMs / 1_000)) };
}

/**
 * Runs, on one fresh index: insert n timers (due times uniform over the spread), measure memory, cancel
 * n/10 of them by id, top up to n, the mixed workload, then expire everything (advance far past the last
 * due time, maxBatch per call, until empty). `memory` adds implementation-specific fields after insert.
 */
export function runWorkloads(
  make: () => TimerIndex,
  cfg: WorkloadConfig,
  memory: (index: TimerIndex) => Record<string, number> = () => ({}),
): Figures {
  const { n, startMs, spreadMs, maxBatch } = cfg;
  const bulk = measureBulk(make, cfg);
  const rnd = seededRandom(cfg.seed);
  const ids: string[] = new Array<string>(CHUNK).fill('');
  const dues = new Float64Array(CHUNK);
  gc();
  const before = heapAndBuffers();
  const index = make();
  let maxAdvanceMs = 0;
  let early = 0;

  // Insert.
  const cpu: Record<string, number> = {};
  let c0 = cpuMs();
  let insertMs = 0;
  for (let base = 0; base < n; base += CHUNK) {
    const m = Math.min(CHUNK, n - base);
    for (let i = 0; i < m; i++) {
      ids[i] = jobId(base + i);
      dues[i] = startMs + 1 + Math.floor(rnd() * spreadMs);
    }
    const t = performance.now();
    for (let i = 0; i < m; i++) index.add(ids[i]!, dues[i]!);
    insertMs += performance.now() - t;
  }
  cpu['insert'] = cpuMs() - c0;
  ids.fill('');
  gc();
  const bytesPerTimer = (heapAndBuffers() - before) / n;
  const extra = memory(index);

  // Cancel n/10 distinct pending timers by id, in a scattered order.
  const cancels = Math.floor(n / 10);
  const stride = coprimeStride(n);
  let cancelMs = 0;
  let hits = 0;
  c0 = cpuMs();
  for (let base = 0; base < cancels; base += CHUNK) {
    const m = Math.min(CHUNK, cancels - base);
    for (let i = 0; i < m; i++) ids[i] = jobId(((base + i) * stride) % n);
    const t = performance.now();
    for (let i = 0; i < m; i++) if (index.cancelById(ids[i]!)) hits++;
    cancelMs += performance.now() - t;
  }
  cpu['cancel'] = cpuMs() - c0;
  if (hits !== cancels) throw new Error(`${index.name}: cancelled ${hits} of ${cancels} pending timers`);
  let nextKey = n;
  for (let i = 0; i < cancels; i++) index.add(jobId(nextKey++), startMs + 1 + Math.floor(rnd() * spreadMs));

  // Mixed: add, cancel, add, advance; time moves so that about one timer expires per advance, which
  // keeps n pending; new timers are due up to one spread ahead.
  const stepMs = spreadMs / n;
  let clock = startMs;
  const nows = new Float64Array(CHUNK);
  let mixedMs = 0;
  c0 = cpuMs();
  for (let base = 0; base < cfg.mixedOps; base += CHUNK) {
    const m = Math.min(CHUNK, cfg.mixedOps - base);
    for (let i = 0; i < m; i++) {
      switch ((base + i) & 3) {
        case 0:
        case 2:
          ids[i] = jobId(nextKey++);
          dues[i] = Math.floor(clock) + 1 + Math.floor(rnd() * spreadMs);
          break;
        case 1:
          ids[i] = jobId(Math.floor(rnd() * nextKey));
          break;
        default:
          clock += stepMs;
          nows[i] = Math.floor(clock);
      }
    }
    const t = performance.now();
    for (let i = 0; i < m; i++) {
      switch ((base + i) & 3) {
        case 0:
        case 2:
          index.add(ids[i]!, dues[i]!);
          break;
        case 1:
          index.cancelById(ids[i]!);
          break;
        default: {
          const nowMs = nows[i]!;
          const a = performance.now();
          const batch = index.advance(nowMs, maxBatch);
          const took = performance.now() - a;
          if (took > maxAdvanceMs) maxAdvanceMs = took;
          for (let k = 0; k < batch.length; k++) if (batch.dueMs[k]! > nowMs) early++;
        }
      }
    }
    mixedMs += performance.now() - t;
  }
  cpu['mixed'] = cpuMs() - c0;
  ids.fill('');

  // Expire: advance far past the last due time until empty.
  const pending = index.size;
  const endMs = Math.floor(clock) + spreadMs + 2;
  let expired = 0;
  let outOfOrder = 0;
  let lastDue = -Infinity;
  let expireMs = 0;
  const advanceMs: number[] = [];
  let maxAdvanceCpuMs = 0;
  c0 = cpuMs();
  for (let calls = 0; index.size > 0 && expired < cfg.expireLimit && calls < 10 * pending + 1_000; calls++) {
    const c = cpuMs();
    const t = performance.now();
    const batch = index.advance(endMs, maxBatch);
    const took = performance.now() - t;
    maxAdvanceCpuMs = Math.max(maxAdvanceCpuMs, cpuMs() - c);
    expireMs += took;
    advanceMs.push(took);
    if (took > maxAdvanceMs) maxAdvanceMs = took;
    for (let k = 0; k < batch.length; k++) {
      const dueMs = batch.dueMs[k]!;
      if (dueMs > endMs) early++;
      if (dueMs < lastDue) outOfOrder++;
      lastDue = dueMs;
    }
    expired += batch.length;
  }
  cpu['expire'] = cpuMs() - c0;
  advanceMs.sort((a, b) => a - b);
  const p99AdvanceMs = advanceMs[Math.floor(advanceMs.length * 0.99)] ?? 0;

  return {
    impl: index.name,
    n,
    insertPerSec: Math.round(n / (insertMs / 1_000)),
    cancelPerSec: Math.round(cancels / (cancelMs / 1_000)),
    expirePerSec: Math.round(expired / (expireMs / 1_000)),
    mixedOpsPerSec: Math.round(cfg.mixedOps / (mixedMs / 1_000)),
    bytesPerTimer: Math.round(bytesPerTimer * 10) / 10,
    maxAdvanceMs: Math.round(maxAdvanceMs * 100) / 100,
    early,
    outOfOrder,
    lost: cfg.expireLimit === Infinity ? pending - expired : 0,
    expired,
    p99AdvanceMs: Math.round(p99AdvanceMs * 100) / 100,
    // CPU time (all threads) of the longest expire-phase call: what it would take without other load.
    maxAdvanceCpuMs: Math.round(maxAdvanceCpuMs * 100) / 100,
    ...bulk,
    // The same rates per second of this process's CPU time (all threads), less skewed by other load.
    cpuInsertPerSec: Math.round(n / (cpu['insert']! / 1_000)),
    cpuCancelPerSec: Math.round(cancels / (cpu['cancel']! / 1_000)),
    cpuExpirePerSec: Math.round(expired / (cpu['expire']! / 1_000)),
    cpuMixedOpsPerSec: Math.round(cfg.mixedOps / (cpu['mixed']! / 1_000)),
    ...extra,
  };
}
