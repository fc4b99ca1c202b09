import { describe, expect, it } from 'vitest';
import { buildConfig, ConfigError, fromEnv, requirePositiveInt } from './index.js';

interface Opts {
  port: number;
  name: string;
  verbose: boolean;
  brokers: string[];
  weights?: number[];
}
const defaults: Opts = { port: 80, name: 'x', verbose: false, brokers: ['a:1'] };
const validate = (c: Opts, problem: (m: string) => void) => requirePositiveInt(problem, 'port', c.port);

describe('buildConfig', () => {
  it('applies defaults, overrides and freezes', () => {
    const c = buildConfig('t', defaults, { port: 8080 }, validate);
    expect(c).toEqual({ ...defaults, port: 8080 });
    expect(Object.isFrozen(c)).toBe(true);
  });
  it('lists every problem with a stable code', () => {
    try {
      buildConfig('t', defaults, { port: -1 }, validate);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).code).toBe('SCHED_E_CONFIG');
      expect((e as ConfigError).problems).toEqual(['port must be a positive integer (got -1)']);
    }
  });
});

describe('fromEnv', () => {
  const spec = {
    port: { env: 'PORT', kind: 'int' },
    verbose: { env: 'VERBOSE', kind: 'bool' },
    brokers: { env: 'BROKERS', kind: 'list' },
    weights: { env: 'WEIGHTS', kind: 'ints' },
  } as const;
  it('parses kinds', () => {
    expect(fromEnv<Opts>('t', { PORT: '9', VERBOSE: 'true', BROKERS: 'a:1, b:2' }, spec)).toEqual({
      port: 9,
      verbose: true,
      brokers: ['a:1', 'b:2'],
    });
  });
  it('names the variable that does not parse', () => {
    expect(() => fromEnv<Opts>('t', { PORT: 'x' }, spec)).toThrow(/PORT="x" is not an integer/);
  });
  it('parses a list of integers, and refuses one with a gap or a non-integer', () => {
    expect(fromEnv<Opts>('t', { WEIGHTS: '7, 2,1' }, spec)).toEqual({ weights: [7, 2, 1] });
    expect(() => fromEnv<Opts>('t', { WEIGHTS: '7,,1' }, spec)).toThrow(
      /WEIGHTS="7,,1" is not a comma-separated list of integers/,
    );
    for (const bad of ['7,2.5,1', '0x10,1,1', '1e3,1,1'])
      expect(() => fromEnv<Opts>('t', { WEIGHTS: bad }, spec)).toThrow(/WEIGHTS=/);
  });
});
