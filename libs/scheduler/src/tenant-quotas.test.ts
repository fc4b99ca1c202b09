import { describe, expect, it } from 'vitest';
import { PendingCaps, shareOf } from './tenant-quotas.js';

describe('shareOf', () => {
  it('never hands out more than is left across the fleet, and someone can take the last one', () => {
    for (const total of [1, 3, 12])
      for (let left = 0; left <= 30; left++) {
        // every split of the partitions into two processes
        for (let cut = 1; cut < total; cut++) {
          const a = Array.from({ length: cut }, (_, i) => i);
          const b = Array.from({ length: total - cut }, (_, i) => i + cut);
          const sum = shareOf(left, a, total) + shareOf(left, b, total);
          expect(sum).toBeLessThanOrEqual(left);
          if (left > 0) expect(shareOf(left, a, total)).toBeGreaterThan(0); // a holds partition 0
        }
        expect(
          shareOf(
            left,
            Array.from({ length: total }, (_, i) => i),
            total,
          ),
        ).toBe(left);
      }
  });
  it('is nothing without partitions or room', () => {
    expect(shareOf(5, [], 12)).toBe(0);
    expect(shareOf(0, [0, 1], 2)).toBe(0);
    expect(shareOf(-3, [0, 1], 2)).toBe(0);
  });
});

describe('PendingCaps', () => {
  const make = (caps: Map<string, number>, counts: Map<string, number>) => {
    let countsRead = 0;
    const pool = {
      query: async (q: string | { name: string }) => {
        if (typeof q === 'string') return { rows: [...caps].map(([tenant_id, cap]) => ({ tenant_id, cap })) };
        countsRead++;
        return { rows: [...counts].map(([tenant_id, n]) => ({ tenant_id, n })) };
      },
    };
    const c = new PendingCaps({
      pool: pool as never,
      log: { warn() {} } as never,
      owned: () => [0],
      totalPartitions: () => 1,
      everyMs: 0,
    });
    return { c, countsRead: () => countsRead };
  };
  const create = (tenantId: string) => ({ kind: 'CreateJob', tenantId });
  it('refuses the creates beyond the cap and holds the room of the admitted ones until settled', async () => {
    const { c } = make(new Map([['a', 5]]), new Map([['a', 3]]));
    await c.once();
    const first = c.admit([
      create('a'),
      create('a'),
      create('a'),
      create('b'),
      { kind: 'CancelJob', tenantId: 'a' },
    ]);
    expect(first.over).toEqual([create('a')]);
    // Not committed: the room comes back.
    c.settle(first.ticket, false);
    expect(c.admit([create('a'), create('a'), create('a')]).over).toHaveLength(1);
  });
  it('keeps committed creates as taken until a count includes them', async () => {
    const counts = new Map([['a', 0]]);
    const { c } = make(new Map([['a', 2]]), counts);
    await c.once();
    const t = c.admit([create('a'), create('a')]);
    expect(t.over).toEqual([]);
    c.settle(t.ticket, true);
    expect(c.admit([create('a')]).over).toHaveLength(1);
    counts.set('a', 1); // one of them finished
    await c.once();
    const again = c.admit([create('a'), create('a')]);
    expect(again.over).toHaveLength(1);
  });
  it('costs nothing for a fleet without caps', async () => {
    const { c, countsRead } = make(new Map(), new Map());
    await c.once();
    expect(c.admit([create('a')]).over).toEqual([]);
    expect(countsRead()).toBe(0);
  });
});
