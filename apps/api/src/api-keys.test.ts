import { describe, expect, it } from 'vitest';
import { parseApiKeys } from './api-keys.js';

describe('parseApiKeys', () => {
  it('reads callers, tenants and permissions (permission names may contain colons)', () => {
    const keys = parseApiKeys('k1=alice@ops:acme:dlq:replay|dlq:replay-quarantined, k2=bob:default');
    expect(keys.get('k1')).toEqual({
      id: 'alice@ops',
      tenantId: 'acme',
      permissions: ['dlq:replay', 'dlq:replay-quarantined'],
    });
    expect(keys.get('k2')).toEqual({ id: 'bob', tenantId: 'default', permissions: [] });
    expect(parseApiKeys(undefined).size).toBe(0);
  });
  it('names the bad entry', () => {
    expect(() => parseApiKeys('nokey')).toThrow(/"nokey"/);
  });
});
