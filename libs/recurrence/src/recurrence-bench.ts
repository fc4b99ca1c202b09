/**
 * Benchmark of occurrence generation: `npx tsx libs/recurrence/src/recurrence-bench.ts [--json]`.
 * Prints, per case, the median over several runs of wall time and CPU time (CPU time is the fairer
 * figure on a shared machine), after a warm-up.
 */
import { compileRecurrence, type RecurrenceSpec } from './index';

const YEAR_FROM = Date.UTC(2026, 0, 1);
const YEAR_TO = Date.UTC(2027, 0, 1);
const base = {
  cron: null,
  intervalMs: null,
  startAtMs: null,
  endAtMs: null,
} satisfies Partial<RecurrenceSpec>;

interface Case {
  name: string;
  run: () => number;
}

const cases: Case[] = [
  {
    name: 'hourly cron, America/New_York, one year (between)',
    run: () =>
      compileRecurrence({ ...base, cron: '0 * * * *', timeZone: 'America/New_York' }).between(
        YEAR_FROM,
        YEAR_TO,
        1_000_000,
      ).occurrences.length,
  },
  {
    name: 'hourly interval, Europe/London, one year (between)',
    run: () =>
      compileRecurrence({
        ...base,
        intervalMs: 3_600_000,
        startAtMs: YEAR_FROM,
        timeZone: 'Europe/London',
      }).between(YEAR_FROM, YEAR_TO, 1_000_000).occurrences.length,
  },
  {
    name: 'every minute, Australia/Lord_Howe, one year (between)',
    run: () =>
      compileRecurrence({ ...base, cron: '* * * * *', timeZone: 'Australia/Lord_Howe' }).between(
        YEAR_FROM,
        YEAR_TO,
        1_000_000,
      ).occurrences.length,
  },
  {
    name: 'daily 02:30, America/New_York: 1,000 calls of next(after, 1)',
    run: () => {
      const rec = compileRecurrence({ ...base, cron: '30 2 * * *', timeZone: 'America/New_York' });
      let n = 0;
      for (let i = 0; i < 1000; i++) n += rec.next(YEAR_FROM + i * 8_640_000, 1).occurrences.length;
      return n;
    },
  },
  {
    name: 'compile a cron spec, 1,000 times',
    run: () => {
      for (let i = 0; i < 1000; i++)
        compileRecurrence({ ...base, cron: `${i % 60} 9 * * MON-FRI`, timeZone: 'Europe/Paris' });
      return 1000;
    },
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const results = cases.map((c) => {
  for (let i = 0; i < 3; i++) c.run();
  const wall: number[] = [];
  const cpu: number[] = [];
  let items = 0;
  for (let i = 0; i < 7; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    items = c.run();
    wall.push(performance.now() - t0);
    const dc = process.cpuUsage(c0);
    cpu.push((dc.user + dc.system) / 1000);
  }
  return { name: c.name, items, wallMs: +median(wall).toFixed(2), cpuMs: +median(cpu).toFixed(2) };
});

if (process.argv.includes('--json')) console.log(JSON.stringify(results, null, 2));
else
  for (const r of results)
    console.log(
      `${r.name.padEnd(62)} ${String(r.items).padStart(7)} items  ${r.wallMs.toFixed(1).padStart(8)} ms wall  ${r.cpuMs.toFixed(1).padStart(8)} ms cpu`,
    );
