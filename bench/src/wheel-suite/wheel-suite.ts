import { parseArgs } from 'node:util';
import { TimingWheel, type TimingWheelOptions, WHEEL_DEFAULTS, type WheelEntry } from '@sched/timing-wheel';
import type { BenchSuite, SuiteOutcome } from '../bench-suite';
import { HeapBaseline } from './heap-baseline';
import {
  type ExpiredView,
  type Figures,
  runWorkloads,
  type TimerIndex,
  type WorkloadConfig,
} from './workloads';

/** The wheel behind the workloads' interface. */
class WheelIndex implements TimerIndex {
  readonly name = 'wheel';
  readonly wheel: TimingWheel;

  constructor(options: TimingWheelOptions) {
    this.wheel = new TimingWheel(options);
  }

  get size(): number {
    return this.wheel.size;
  }

  add(id: string, dueMs: number): void {
    this.wheel.add(id, dueMs);
  }

  cancelById(id: string): boolean {
    return this.wheel.cancelById(id);
  }

  advance(nowMs: number, maxBatch: number): ExpiredView {
    return this.wheel.advance(nowMs, maxBatch);
  }

  load(entries: readonly WheelEntry[]): void {
    this.wheel.load(entries);
  }

  cancelManyById(ids: readonly string[]): number {
    return this.wheel.cancelManyById(ids);
  }
}

const DAY_MS = 86_400_000;
const START_MS = Date.UTC(2025, 5, 1);

/** The goals, checked at the largest n of the run. */
const GOALS = {
  insertPerSec: 5_000_000,
  cancelPerSec: 3_000_000,
  mixedVsHeap: 3,
  wheelBytesPerTimer: 64,
  bytesPerTimer: 200,
  maxAdvanceMs: 10,
} as const;

const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');

function printRow(f: Figures): void {
  const cells = [
    f.impl.padEnd(6),
    fmt(f.n).padStart(11),
    fmt(f.insertPerSec).padStart(11),
    fmt(f.cancelPerSec).padStart(11),
    fmt(f.expirePerSec).padStart(11),
    fmt(f.mixedOpsPerSec).padStart(11),
    f.bytesPerTimer.toFixed(1).padStart(9),
    f.maxAdvanceMs.toFixed(2).padStart(9),
    String(f.early).padStart(5),
  ];
  console.log(cells.join(' '));
}

function goalLines(results: readonly Figures[]): string[] {
  const n = Math.max(...results.map((r) => r.n));
  const wheel = results.find((r) => r.impl === 'wheel' && r.n === n);
  const heap = results.find((r) => r.impl === 'heap' && r.n === n);
  if (wheel === undefined) return [];
  const mark = (ok: boolean): string => (ok ? 'met    ' : 'NOT MET');
  const lines = [
    `goals at n = ${fmt(n)}:`,
    `  ${mark(wheel.insertPerSec >= GOALS.insertPerSec)} inserts/s ${fmt(wheel.insertPerSec)} (goal >= ${fmt(GOALS.insertPerSec)})`,
    `  ${mark(wheel.cancelPerSec >= GOALS.cancelPerSec)} cancels/s ${fmt(wheel.cancelPerSec)} (goal >= ${fmt(GOALS.cancelPerSec)})`,
  ];
  const cancelMany = Number(wheel['cancelManyPerSec']);
  if (Number.isFinite(cancelMany)) {
    lines.push(
      `          batch APIs: cancelManyById ${fmt(cancelMany)} cancels/s, load ${fmt(Number(wheel['loadPerSec']))} inserts/s`,
    );
  }
  if (heap !== undefined) {
    const ratio = wheel.mixedOpsPerSec / heap.mixedOpsPerSec;
    lines.push(
      `  ${mark(ratio >= GOALS.mixedVsHeap)} mixed ${ratio.toFixed(1)}x the heap (goal >= ${GOALS.mixedVsHeap}x)`,
    );
  }
  const wheelBytes = Number(wheel['wheelBytesPerTimer']);
  lines.push(
    `  ${mark(wheelBytes <= GOALS.wheelBytesPerTimer)} wheel itself ${wheelBytes.toFixed(1)} B/timer (goal <= ${GOALS.wheelBytesPerTimer})`,
    `  ${mark(wheel.bytesPerTimer <= GOALS.bytesPerTimer)} with id index ${wheel.bytesPerTimer.toFixed(1)} B/timer (goal <= ${GOALS.bytesPerTimer})`,
    `  ${mark(wheel.maxAdvanceMs <= GOALS.maxAdvanceMs)} longest advance ${wheel.maxAdvanceMs.toFixed(2)} ms (goal <= ${GOALS.maxAdvanceMs})`,
    `  ${mark(wheel.early === 0 && wheel.outOfOrder === 0 && wheel.lost === 0)} early ${wheel.early}, out of order ${wheel.outOfOrder}, lost ${wheel.lost} (goal 0)`,
  );
  return lines;
}

export const wheelSuite: BenchSuite = {
  name: 'wheel',
  description: 'timing wheel vs binary heap',
  async run(args: readonly string[]): Promise<SuiteOutcome> {
    const { values } = parseArgs({
      args: [...args],
      options: {
        sizes: { type: 'string', default: '1000000,10000000' },
        impls: { type: 'string', default: 'wheel,heap' },
        'mixed-ops': { type: 'string', default: '1000000' },
        'heap-expire-limit': { type: 'string', default: '1000000' },
        'max-batch': { type: 'string', default: '10000' },
        seed: { type: 'string', default: '42' },
        'wheel-bits': { type: 'string', default: String(WHEEL_DEFAULTS.wheelBits) },
        'cascade-budget': { type: 'string', default: String(WHEEL_DEFAULTS.cascadeBudget) },
      },
    });
    const sizes = values.sizes.split(',').map(Number);
    const wheelOptions = {
      startMs: START_MS,
      wheelBits: Number(values['wheel-bits']),
      cascadeBudget: Number(values['cascade-budget']),
    };
    const impls = values.impls.split(',');
    const heapExpireLimit = Number(values['heap-expire-limit']);
    const base = {
      mixedOps: Number(values['mixed-ops']),
      maxBatch: Number(values['max-batch']),
      seed: Number(values.seed),
      startMs: START_MS,
      spreadMs: DAY_MS,
    };
    if (
      sizes.some((n) => !Number.isSafeInteger(n) || n < 10) ||
      impls.some((i) => i !== 'wheel' && i !== 'heap')
    ) {
      throw new Error(
        'usage: wheel [--sizes 1000000,10000000] [--impls wheel,heap] [--mixed-ops N] [--max-batch N] [--seed N] ' +
          '[--wheel-bits B] [--cascade-budget N] [--heap-expire-limit N]',
      );
    }
    console.log(
      `wheel suite: due times uniform over 24 h, maxBatch ${fmt(base.maxBatch)}, ${fmt(base.mixedOps)} mixed ops, seed ${base.seed}, ` +
        `wheelBits ${wheelOptions.wheelBits}, cascadeBudget ${fmt(wheelOptions.cascadeBudget)}, ` +
        `heap expire phase stops after ${fmt(heapExpireLimit)}`,
    );
    console.log(
      'impl             n    insert/s    cancel/s    expire/s     mixed/s  B/timer  maxAdv ms early',
    );
    const results: Figures[] = [];
    for (const n of sizes) {
      const cfg: Omit<WorkloadConfig, 'expireLimit'> = { ...base, n };
      for (const impl of impls) {
        const figures =
          impl === 'wheel'
            ? runWorkloads(
                () => new WheelIndex(wheelOptions),
                { ...cfg, expireLimit: Infinity },
                (index) => {
                  const stats = (index as WheelIndex).wheel.stats();
                  return {
                    wheelBytesPerTimer: Math.round((stats.wheelBytes / n) * 10) / 10,
                    idIndexBytesPerTimer: Math.round((stats.idIndexBytes / n) * 10) / 10,
                  };
                },
              )
            : runWorkloads(() => new HeapBaseline(), { ...cfg, expireLimit: heapExpireLimit });
        results.push(figures);
        printRow(figures);
      }
    }
    for (const line of goalLines(results)) console.log(line);
    return { results, workload: { ...base, sizes, dueSpread: '24h uniform', heapExpireLimit, wheelOptions } };
  },
};
