import { describe, expect, it } from 'vitest';
import { apiConfig } from './config.js';

describe('apiConfig', () => {
  it('defaults to the local stack and reads the environment', () => {
    expect(apiConfig({})).toMatchObject({ host: '127.0.0.1', port: 3000, brokers: ['127.0.0.1:9092'] });
    expect(apiConfig({ SCHED_API_PORT: '8088', KAFKA_BROKERS: 'a:1,b:2' })).toMatchObject({
      port: 8088,
      brokers: ['a:1', 'b:2'],
    });
  });
  it('lists every problem with its fix, and freezes', () => {
    expect(() => apiConfig({ SCHED_API_PORT: '70000', DATABASE_URL: 'mysql://x' })).toThrow(
      /SCHED_API_PORT[\s\S]*DATABASE_URL/,
    );
    expect(Object.isFrozen(apiConfig({}))).toBe(true);
  });
});
