import { parseArgs } from 'node:util';
import { ensureStackUp } from '@sched/local-stack';
import type { BenchSuite, SuiteOutcome } from '../bench-suite';
import { kafkaHopFloor, postgresCommitFloor } from './hop-floor';
import { measureWheelFloor } from './wheel-floor';

const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');

/**
 * What this machine allows at all, measured apart from our code: the least per-operation cost of a
 * due-time index with the wheel issue's constraints (`wheel`), and the latency of the two hops a
 * dispatch must cross (`postgres`, `kafka`). The goals of the wheel and end-to-end issues are read
 * against these (see docs/benchmarks.md).
 */
export const floorSuite: BenchSuite = {
  name: 'floors',
  description:
    'what this machine allows: the least cost of an index insert/cancel, one Postgres commit, one Kafka hop',
  async run(args: readonly string[]): Promise<SuiteOutcome> {
    const { values } = parseArgs({
      args: [...args],
      options: {
        only: { type: 'string', default: 'wheel,postgres,kafka' },
        n: { type: 'string', default: '10000000' },
        rate: { type: 'string', default: '1000' },
        seconds: { type: 'string', default: '20' },
      },
    });
    const only = values.only.split(',');
    const n = Number(values.n);
    const rate = Number(values.rate);
    const hops = Math.round(rate * Number(values.seconds));
    if (
      only.some((o) => !['wheel', 'postgres', 'kafka'].includes(o)) ||
      !Number.isSafeInteger(n) ||
      n < 1_000 ||
      !(rate > 0) ||
      !(hops > 0)
    )
      throw new Error(
        'usage: floors [--only wheel,postgres,kafka] [--n 10000000] [--rate 1000] [--seconds 20]',
      );
    const results: Record<string, unknown>[] = [];
    if (only.includes('wheel')) {
      const w = measureWheelFloor(n);
      console.log(
        `index floor at ${fmt(n)} pending: hash+copy ${w.hashCopyNs} ns; insert ${w.insertNs} ns ` +
          `(at most ${fmt(w.insertCeilingPerSec)}/s); cancel ${w.cancelNs} ns (at most ${fmt(w.cancelCeilingPerSec)}/s)`,
      );
      results.push({ floor: 'index', ...w });
    }
    if (only.includes('postgres') || only.includes('kafka')) await ensureStackUp();
    for (const hop of ['postgres', 'kafka'] as const) {
      if (!only.includes(hop)) continue;
      const f = hop === 'postgres' ? await postgresCommitFloor(hops, rate) : await kafkaHopFloor(hops, rate);
      const ms = (us: number) => (us / 1000).toFixed(2);
      console.log(
        `${f.hop} at ${fmt(rate)}/s (${fmt(hops)}): p50 ${ms(f.latencyUs.p50)} ms, p99 ${ms(f.latencyUs.p99)} ms, ` +
          `p99.9 ${ms(f.latencyUs.p999)} ms, max ${ms(f.latencyUs.max)} ms`,
      );
      results.push({ floor: f.hop, ...f });
    }
    return { results, workload: { n, rate, seconds: Number(values.seconds) } };
  },
};
