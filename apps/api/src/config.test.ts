import { describe, expect, it } from 'vitest';
import { apiConfig } from './config.js';

const keys = { SCHED_API_KEYS: 'k=alice:default:' };

describe('apiConfig', () => {
  it('defaults to the local stack and reads the environment', () => {
    expect(apiConfig(keys)).toMatchObject({
      host: '127.0.0.1',
      port: 3000,
      brokers: ['127.0.0.1:9092'],
      auth: 'keys',
    });
    expect(apiConfig({ ...keys, SCHED_API_PORT: '8088', KAFKA_BROKERS: 'a:1,b:2' })).toMatchObject({
      port: 8088,
      brokers: ['a:1', 'b:2'],
    });
  });
  it('refuses to start without keys, unless development mode says so', () => {
    expect(() => apiConfig({})).toThrow(/SCHED_API_KEYS[\s\S]*SCHED_API_AUTH=off/);
    expect(apiConfig({ SCHED_API_AUTH: 'off' })).toMatchObject({ auth: 'off' });
    expect(() => apiConfig({ ...keys, SCHED_API_AUTH: 'maybe' })).toThrow(/SCHED_API_AUTH/);
  });
  it('lists every problem with its fix, and freezes', () => {
    expect(() => apiConfig({ ...keys, SCHED_API_PORT: '70000', DATABASE_URL: 'mysql://x' })).toThrow(
      /SCHED_API_PORT[\s\S]*DATABASE_URL/,
    );
    expect(Object.isFrozen(apiConfig(keys))).toBe(true);
  });
});
