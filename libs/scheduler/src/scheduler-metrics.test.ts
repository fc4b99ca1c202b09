import { describe, expect, it } from 'vitest';
import { createSchedulerMetrics } from './scheduler-metrics.js';

describe('sched_wheel_size: read from the owned partitions at every scrape', () => {
  it('shows the sizes the source gives now, and drops a partition the source no longer names', async () => {
    const m = createSchedulerMetrics('owner-1');
    let sizes: [number, number][] = [
      [3, 42],
      [7, 0],
    ];
    m.setWheelSizeSource(() => sizes);
    const first = await m.registry.metrics();
    expect(first).toMatch(/sched_wheel_size\{[^}]*partition="3"[^}]*\} 42/);
    expect(first).toMatch(/sched_wheel_size\{[^}]*partition="7"[^}]*\} 0/);
    sizes = [[3, 41]];
    const second = await m.registry.metrics();
    expect(second).toMatch(/sched_wheel_size\{[^}]*partition="3"[^}]*\} 41/);
    expect(second).not.toMatch(/partition="7"/);
  });
});
