import { describe, expect, it } from 'vitest';
import { parseE2eArgs } from './options.js';

describe('e2e bench arguments', () => {
  it('takes a fixed drain rate, and none by default', () => {
    expect(parseE2eArgs([]).drainRate).toBeNull();
    const o = parseE2eArgs(['--only', 'drain', '--system', 'ours', '--drain-rate', '9000']);
    expect(o).toMatchObject({ drainRate: 9000, workloads: ['drain'], systems: ['ours'] });
  });

  it('refuses a drain rate that is missing, not an integer or out of range, with the usage line', () => {
    for (const bad of [
      ['--drain-rate'],
      ['--drain-rate', '12.5'],
      ['--drain-rate', '0'],
      ['--drain-rate', '100001'],
    ])
      expect(() => parseE2eArgs(bad)).toThrow(/--drain-rate takes an integer from 1 to 100000[\s\S]*usage: /);
  });
});
