/** What a benchmark suite gives the dispatcher (`main.ts`). */
export interface BenchSuite {
  readonly name: string;
  /** One line for `npm run bench -- --help`. */
  readonly description: string;
  /** Runs the suite, printing its figures as it goes; `args` are the command-line words after the suite name. */
  run(args: readonly string[]): Promise<SuiteOutcome>;
}

/** The suite's part of the JSON report: `{ suite, machine, ...outcome }`. */
export interface SuiteOutcome {
  readonly results: readonly Record<string, unknown>[];
  readonly [extra: string]: unknown;
}
