import { describe, expect, it } from 'vitest';
import { floorSuite } from './floor-suite';
import { measureWheelFloor } from './wheel-floor';

describe('floors suite', () => {
  it('measures the index floor: every step timed, the ceilings follow from it', () => {
    const f = measureWheelFloor(20_000);
    expect(f.n).toBe(20_000);
    for (const ns of [f.hashCopyNs, f.insertNs, f.cancelNs]) expect(ns).toBeGreaterThan(0);
    expect(f.insertCeilingPerSec).toBe(Math.round(1e9 / f.insertNs));
    expect(f.cancelCeilingPerSec).toBe(Math.round(1e9 / f.cancelNs));
  });

  it('refuses unknown floors and sizes with its usage', async () => {
    await expect(floorSuite.run(['--only', 'disk'])).rejects.toThrow(/usage: floors/);
    await expect(floorSuite.run(['--only', 'wheel', '--n', '10'])).rejects.toThrow(/usage: floors/);
  });
});
