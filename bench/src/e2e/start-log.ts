import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as hdr from 'hdr-histogram-js';

export interface LagMs {
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

/** An HDR histogram of non-negative integer milliseconds (1 ms .. 1 h, 3 significant digits). */
export function msHistogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000,
    numberOfSignificantValueDigits: 3,
  });
}

export function lagOf(h: hdr.Histogram): LagMs {
  return {
    p50: h.getValueAtPercentile(50),
    p99: h.getValueAtPercentile(99),
    p999: h.getValueAtPercentile(99.9),
    max: h.maxValue,
  };
}

/**
 * Every handler start of one job set (one repetition): jobs are numbered 0..n-1 and each has an
 * intended (due) time. Lag is always measured against the due time, never against when the bench
 * sent the job, so a slow system cannot hide its lag behind a slow producer (no closed loop).
 */
export class StartLog {
  readonly n: number;
  /** First handler start per job (ms since epoch), NaN until started. */
  readonly first: Float64Array;
  /** Claim time the dispatch carried (ours only), NaN otherwise. */
  readonly claim: Float64Array;
  /** Arrival of the dispatch record at the bench's (lazy) Kafka consumer (ours only), NaN otherwise. */
  readonly kafkaSeen: Float64Array;
  /** Kafka record timestamp of the dispatch record: the broker's append time (ours only), NaN otherwise. */
  readonly kafkaTs: Float64Array;
  private readonly count: Uint16Array;
  started = 0;
  duplicates = 0;
  early = 0;
  private waiters: (() => void)[] = [];

  constructor(
    readonly tag: number,
    readonly due: Float64Array,
  ) {
    this.n = due.length;
    this.first = new Float64Array(this.n).fill(NaN);
    this.claim = new Float64Array(this.n).fill(NaN);
    this.kafkaSeen = new Float64Array(this.n).fill(NaN);
    this.kafkaTs = new Float64Array(this.n).fill(NaN);
    this.count = new Uint16Array(this.n);
  }

  record(i: number, startMs: number, claimMs: number): void {
    if (!(i >= 0 && i < this.n)) return;
    const c = this.count[i]!;
    if (c < 65_535) this.count[i] = c + 1;
    if (c > 0) {
      this.duplicates++;
      return;
    }
    this.first[i] = startMs;
    if (claimMs >= 0) this.claim[i] = claimMs;
    if (startMs < this.due[i]!) this.early++;
    this.started++;
    if (this.started === this.n) for (const w of this.waiters.splice(0)) w();
  }

  recordKafka(i: number, seenMs: number, tsMs: number): void {
    if (!(i >= 0 && i < this.n) || !Number.isNaN(this.kafkaSeen[i]!)) return;
    this.kafkaSeen[i] = seenMs;
    this.kafkaTs[i] = tsMs;
  }

  /**
   * Writes every job's due, claim, on-Kafka and first-start times (ms since the epoch, NaN when
   * missing) as CSV into `dir` (E2E_TIMES_DIR): for finding when in a run the slow jobs were.
   */
  writeCsv(dir: string): void {
    const lines = ['due,claim,kafka,start'];
    for (let i = 0; i < this.n; i++)
      lines.push(`${this.due[i]},${this.claim[i]},${this.kafkaTs[i]},${this.first[i]}`);
    writeFileSync(join(dir, `times-${this.tag}-${Date.now()}.csv`), lines.join('\n'));
  }

  get lost(): number {
    return this.n - this.started;
  }

  /** Of the jobs not started, how many had their dispatch record seen on Kafka (ours only). */
  get lostAfterDispatch(): number {
    let k = 0;
    for (let i = 0; i < this.n; i++)
      if (Number.isNaN(this.first[i]!) && !Number.isNaN(this.kafkaSeen[i]!)) k++;
    return k;
  }

  /** Resolves when every job started, or at `deadlineMs` (epoch ms), whichever is first. */
  async waitAll(deadlineMs: number): Promise<boolean> {
    if (this.started === this.n) return true;
    return new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(this.started === this.n), Math.max(0, deadlineMs - Date.now()));
      this.waiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Lag (first start − due) of the started jobs whose index passes `include`. */
  lag(include: (i: number) => boolean = () => true): LagMs & { count: number } {
    const h = msHistogram();
    let count = 0;
    for (let i = 0; i < this.n; i++) {
      const s = this.first[i]!;
      if (Number.isNaN(s) || !include(i)) continue;
      h.recordValue(Math.max(0, Math.round(s - this.due[i]!)));
      count++;
    }
    const out = { ...lagOf(h), count };
    h.destroy();
    return out;
  }

  /** A hop's duration histogram: `to[i] − from[i]` over jobs where both are known. */
  hop(
    from: Float64Array,
    to: Float64Array,
    include: (i: number) => boolean = () => true,
  ): LagMs & { count: number } {
    const h = msHistogram();
    let count = 0;
    for (let i = 0; i < this.n; i++) {
      const a = from[i]!;
      const b = to[i]!;
      if (Number.isNaN(a) || Number.isNaN(b) || !include(i)) continue;
      h.recordValue(Math.max(0, Math.round(b - a)));
      count++;
    }
    const out = { ...lagOf(h), count };
    h.destroy();
    return out;
  }

  /** Start times of started jobs, sorted. */
  sortedStarts(): Float64Array {
    const s = new Float64Array(this.started);
    let k = 0;
    for (let i = 0; i < this.n; i++) if (!Number.isNaN(this.first[i]!)) s[k++] = this.first[i]!;
    return s.sort();
  }

  /** Highest number of starts in any `windowMs` window (sliding over start times), per second. */
  peakPerSec(windowMs = 1000): number {
    const s = this.sortedStarts();
    let best = 0;
    let lo = 0;
    for (let hi = 0; hi < s.length; hi++) {
      while (s[hi]! - s[lo]! >= windowMs) lo++;
      best = Math.max(best, hi - lo + 1);
    }
    return (best * 1000) / windowMs;
  }
}

/** Routes worker reports `(tag, index, startMs, claimMs)` to the log of their repetition. */
export class StartHub {
  private readonly logs = new Map<number, StartLog>();
  private nextTag = 1;
  /** Reports for unknown tags (stragglers of closed sets). */
  strays = 0;

  open(due: Float64Array): StartLog {
    const log = new StartLog(this.nextTag++, due);
    this.logs.set(log.tag, log);
    return log;
  }

  get(tag: number): StartLog | undefined {
    return this.logs.get(tag);
  }

  close(log: StartLog): void {
    this.logs.delete(log.tag);
  }

  readonly onStarts = (quads: number[]): void => {
    for (let k = 0; k + 3 < quads.length; k += 4) {
      const log = this.logs.get(quads[k]!);
      if (log) log.record(quads[k + 1]!, quads[k + 2]!, quads[k + 3]!);
      else this.strays++;
    }
  };
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spreadOf(values: number[]): Spread {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return { median: NaN, min: NaN, max: NaN };
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
  return { median, min: v[0]!, max: v[v.length - 1]! };
}
