import { describe, expect, it } from 'vitest';
import { LogThrottle } from './index.js';

describe('LogThrottle', () => {
  it('lets one line per key through per interval and reports how many it dropped', () => {
    const t = new LogThrottle(1_000);
    expect(t.take('a', 0)).toEqual({ dropped: 0 });
    expect(t.take('a', 10)).toBeNull();
    expect(t.take('a', 999)).toBeNull();
    // Another key has its own interval.
    expect(t.take('b', 500)).toEqual({ dropped: 0 });
    expect(t.take('a', 1_000)).toEqual({ dropped: 2 });
    expect(t.take('a', 1_500)).toBeNull();
    expect(t.take('a', 2_100)).toEqual({ dropped: 1 });
  });
});
