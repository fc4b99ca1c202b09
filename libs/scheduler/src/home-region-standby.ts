import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { homeRegion } from '@sched/store';
import type { SchedulerMetrics } from './scheduler-metrics.js';

export interface StandByOptions {
  /** This scheduler's region ('' for none). */
  region: string;
  pollMs: number;
  metrics: Pick<SchedulerMetrics, 'regionStandby'>;
  log: Logger;
  /** Called once, when this process starts standing by. */
  onStandBy?(home: string): void;
  stopping(): boolean;
}

/**
 * Resolves once this scheduler may own partitions: no home region is set, or it is this one.
 * Until then it reads the home region every `pollMs` (`sched_region_standby` is 1 meanwhile), so a
 * standby region's schedulers take over within about `pollMs` of a promotion, plus a group join.
 * Also resolves when `stopping()`.
 */
export async function standByForHomeRegion(pool: pg.Pool, o: StandByOptions): Promise<void> {
  let announced = false;
  for (;;) {
    const home = await homeRegion(pool).catch((err: unknown) => {
      o.log.warn({ err }, 'could not read the home region; trying again');
      return { region: '\u0000unknown' };
    });
    if (!home || home.region === o.region) {
      o.metrics.regionStandby.set(0);
      if (announced) o.log.info({ region: o.region }, 'this region is home: taking partitions');
      return;
    }
    o.metrics.regionStandby.set(1);
    if (!announced) {
      announced = true;
      o.log.warn({ home: home.region, region: o.region || null }, 'another region is home: standing by');
      o.onStandBy?.(home.region);
    }
    if (o.stopping()) return;
    await new Promise((r) => setTimeout(r, o.pollMs));
  }
}
