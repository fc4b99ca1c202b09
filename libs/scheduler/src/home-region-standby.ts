import type pg from 'pg';
import type { Logger } from '@sched/logging';
import { homeRegion, regionClaimUnset } from '@sched/store';
import type { SchedulerMetrics } from './scheduler-metrics.js';

export interface StandByOptions {
  /** This scheduler's region ('' for none). */
  region: string;
  ownerId: string;
  pollMs: number;
  metrics: Pick<SchedulerMetrics, 'regionStandby'>;
  log: Logger;
  /** Called once, when this process starts standing by. */
  onStandBy?(home: string): void;
  stopping(): boolean;
}

/**
 * Resolves once this scheduler may own partitions: its region is home, or it has none and no home
 * region is set. A scheduler with a region that finds none set makes its own home (the first
 * region to start, `regionClaimUnset`), so that another region started later stands by rather
 * than contending for the partitions. Until then it reads the home region every `pollMs`
 * (`sched_region_standby` is 1 meanwhile), so a standby region's schedulers take over within about
 * `pollMs` of a promotion, plus a group join. Also resolves when `stopping()`.
 */
export async function standByForHomeRegion(pool: pg.Pool, o: StandByOptions): Promise<void> {
  let announced = false;
  for (;;) {
    let home: string | undefined;
    try {
      home = (await homeRegion(pool))?.region;
      if (home === undefined && o.region !== '') {
        home = (await regionClaimUnset(pool, o.region, o.ownerId)).region;
        if (home === o.region)
          o.log.warn({ region: o.region }, 'no home region was set: this region is home now');
      }
    } catch (err) {
      o.log.warn({ err }, 'could not read the home region; trying again');
      if (o.stopping()) return;
      await new Promise((r) => setTimeout(r, o.pollMs));
      continue;
    }
    if (home === undefined || home === o.region) {
      o.metrics.regionStandby.set(0);
      if (announced) o.log.info({ region: o.region }, 'this region is home: taking partitions');
      return;
    }
    o.metrics.regionStandby.set(1);
    if (!announced) {
      announced = true;
      o.log.warn({ home, region: o.region || null }, 'another region is home: standing by');
      o.onStandBy?.(home);
    }
    if (o.stopping()) return;
    await new Promise((r) => setTimeout(r, o.pollMs));
  }
}
