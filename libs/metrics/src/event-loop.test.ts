import { describe, expect, it } from 'vitest';
import { createRegistry, watchEventLoop } from './index.js';

function blockFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy: nothing else can run
  }
}

describe('watchEventLoop', () => {
  it('reports a stall longer than the threshold, once, and the gauge keeps it until scraped', async () => {
    const registry = createRegistry();
    const stalls: number[] = [];
    const w = watchEventLoop(registry, 'test_loop_delay_max_seconds', {
      stallMs: 150,
      everyMs: 50,
      onStall: (ms) => stalls.push(ms),
    });
    try {
      await new Promise((r) => setTimeout(r, 60));
      blockFor(400);
      // Wait for the report rather than a fixed time: on a loaded machine (the whole unit suite on
      // two cores) the watcher's next look can come later than 200 ms after the block.
      for (let waited = 0; stalls.length === 0 && waited < 3_000; waited += 25)
        await new Promise((r) => setTimeout(r, 25));
      // Once: further looks over the quiet loop add nothing.
      await new Promise((r) => setTimeout(r, 150));
      expect(stalls).toHaveLength(1);
      expect(stalls[0]).toBeGreaterThanOrEqual(300);
      const first = await registry.getSingleMetricAsString('test_loop_delay_max_seconds');
      const value = Number(/ ([0-9.e+-]+)$/m.exec(first)![1]);
      expect(value).toBeGreaterThanOrEqual(0.3);
      // Reset by the scrape: a quiet loop reads below the stall (generous for a loaded machine).
      await new Promise((r) => setTimeout(r, 120));
      const second = await registry.getSingleMetricAsString('test_loop_delay_max_seconds');
      expect(Number(/ ([0-9.e+-]+)$/m.exec(second)![1])).toBeLessThan(0.3);
    } finally {
      w.stop();
    }
  });

  it('stays quiet when the loop is not blocked', async () => {
    const stalls: number[] = [];
    const w = watchEventLoop(createRegistry(), 'test_quiet_seconds', {
      stallMs: 1_000,
      everyMs: 20,
      onStall: (ms) => stalls.push(ms),
    });
    await new Promise((r) => setTimeout(r, 150));
    w.stop();
    expect(stalls).toEqual([]);
  });
});
