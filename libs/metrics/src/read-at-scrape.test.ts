import { describe, expect, it } from 'vitest';
import { createRegistry, gaugeReadAtScrape } from './index.js';

describe('gaugeReadAtScrape', () => {
  it('reads 0 before a source is set, then the source at every scrape', async () => {
    const registry = createRegistry();
    const g = gaugeReadAtScrape(registry, 'test_restarts', 'restarts');
    const value = async () =>
      Number(/^test_restarts(?:\{[^}]*\})? (\S+)$/m.exec(await registry.metrics())![1]);
    expect(await value()).toBe(0);
    let n = 2;
    g.setSource(() => n);
    expect(await value()).toBe(2);
    n = 5;
    expect(await value()).toBe(5);
  });
});
