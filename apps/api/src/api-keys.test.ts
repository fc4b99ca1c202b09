import { describe, expect, it } from 'vitest';
import { callerOfKey, keyDigest, parseApiKeys } from './api-keys.js';

describe('parseApiKeys', () => {
  it('reads callers, tenants and permissions (permission names may contain colons), held by digest', () => {
    const keys = parseApiKeys('k1=alice@ops:acme:dlq:replay|dlq:replay-quarantined, k2=bob:default');
    expect(callerOfKey(keys, 'k1')).toEqual({
      id: 'alice@ops',
      tenantId: 'acme',
      permissions: ['dlq:replay', 'dlq:replay-quarantined'],
    });
    expect(callerOfKey(keys, 'k2')).toEqual({ id: 'bob', tenantId: 'default', permissions: [] });
    expect([...keys.keys()].every((k) => /^sha256:[0-9a-f]{64}$/.test(k))).toBe(true);
    expect(keys.has('k1')).toBe(false);
    expect(parseApiKeys(undefined).size).toBe(0);
  });
  it('takes a digest instead of the key', () => {
    const keys = parseApiKeys(`${keyDigest('s3cret')}=carol:acme:`);
    expect(callerOfKey(keys, 's3cret')?.id).toBe('carol');
    expect(callerOfKey(keys, keyDigest('s3cret'))).toBeUndefined();
    // The same digest as `printf %s s3cret | sha256sum`.
    expect(keyDigest('s3cret')).toBe(
      'sha256:1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0',
    );
  });
  it('names the bad entry without printing its key', () => {
    expect(() => parseApiKeys('nokey')).toThrow(/"nokey"/);
    expect(() => parseApiKeys('sha256:abc=a:b:')).toThrow(/64 lowercase hex/);
    expect(() => parseApiKeys('topsecret=broken')).not.toThrow(/topsecret/);
  });
});
