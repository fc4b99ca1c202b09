import cliProgress from 'cli-progress';

export interface ProgressOptions {
  /** What is counted, after the numbers ("released"). */
  unit: string;
  /** Where the bar goes; default stderr (stdout stays the command's JSON answer). */
  stream?: NodeJS.WriteStream;
  /** Poll period; default 500 ms. */
  everyMs?: number;
  /** Give up after this long (the bar says so); default: never. */
  timeoutMs?: number;
}

/**
 * Follows a long operation on the terminal: a bar with the count, the rate and the ETA, redrawn
 * while `done()` (polled) climbs to `total`. Not a TTY (a script, CI): one line every few seconds.
 * Resolves with the last count.
 */
export async function followProgress(
  total: number,
  done: () => Promise<number>,
  options: ProgressOptions,
): Promise<number> {
  const stream = options.stream ?? process.stderr;
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `{bar} {value}/{total} ${options.unit} | {rate}/s | ETA {eta_formatted}`,
      noTTYOutput: !stream.isTTY,
      notTTYSchedule: 2_000,
      hideCursor: stream.isTTY ? true : null,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  const t0 = Date.now();
  bar.start(total, 0, { rate: '0.0' });
  let count = 0;
  try {
    while (count < total) {
      if (options.timeoutMs !== undefined && Date.now() - t0 > options.timeoutMs) break;
      await new Promise((r) => setTimeout(r, options.everyMs ?? 500));
      count = Math.min(total, await done());
      const seconds = Math.max(0.001, (Date.now() - t0) / 1000);
      bar.update(count, { rate: (count / seconds).toFixed(1) });
    }
  } finally {
    bar.stop();
  }
  return count;
}
