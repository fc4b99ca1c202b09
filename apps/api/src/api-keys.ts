import { createHash } from 'node:crypto';
import type { ApiCaller } from './app.js';

/** How a key is held: the hex SHA-256 of the key, prefixed, never the key itself. */
export const KEY_DIGEST_PREFIX = 'sha256:';

/** The digest form of a key (what SCHED_API_KEYS may hold instead of the key). */
export function keyDigest(key: string): string {
  return KEY_DIGEST_PREFIX + createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * Parses SCHED_API_KEYS: comma-separated `key=callerId:tenantId:permission|permission`
 * (permissions may be empty), where `key` is the key itself or, better, its digest
 * `sha256:<64 hex digits>` (`keyDigest`, or `printf %s KEY | sha256sum`) so the environment never
 * holds a usable key. Returns callers by digest. Throws with the offending entry.
 */
export function parseApiKeys(spec: string | undefined): Map<string, ApiCaller> {
  const out = new Map<string, ApiCaller>();
  for (const entry of (spec ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([^=]+)=([^:]+):([^:]+):?(.*)$/.exec(entry);
    const shown = entry.replace(/^[^=]*=/, '…=');
    if (!m)
      throw Object.assign(
        new Error(`SCHED_API_KEYS entry "${shown}" must look like key=callerId:tenantId:perm|perm`),
        { code: 'SCHED_E_CONFIG' },
      );
    const key = m[1]!;
    if (key.startsWith(KEY_DIGEST_PREFIX) && !/^sha256:[0-9a-f]{64}$/.test(key))
      throw Object.assign(
        new Error(`SCHED_API_KEYS entry "${shown}": a digest is sha256: and 64 lowercase hex digits`),
        { code: 'SCHED_E_CONFIG' },
      );
    out.set(digestOf(key), { id: m[2]!, tenantId: m[3]!, permissions: m[4]!.split('|').filter(Boolean) });
  }
  return out;
}

/** A key given either way, as its digest. */
export function digestOf(keyOrDigest: string): string {
  return keyOrDigest.startsWith(KEY_DIGEST_PREFIX) ? keyOrDigest : keyDigest(keyOrDigest);
}

/**
 * The caller of a presented key, from callers held by digest. The key is hashed and its digest
 * looked up: no comparison ever runs over a held key's bytes, and an attacker cannot choose the
 * bytes of a digest, so how long a wrong key takes says nothing about a held one (the constant-time
 * comparison of keys, without keeping keys).
 */
export function callerOfKey(callers: Map<string, ApiCaller>, presented: string): ApiCaller | undefined {
  return callers.get(keyDigest(presented));
}
