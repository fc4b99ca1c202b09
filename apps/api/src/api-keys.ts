import type { ApiCaller } from './app.js';

/**
 * Parses SCHED_API_KEYS: comma-separated `key=callerId:tenantId:permission|permission`
 * (permissions may be empty). Throws with the offending entry.
 */
export function parseApiKeys(spec: string | undefined): Map<string, ApiCaller> {
  const out = new Map<string, ApiCaller>();
  for (const entry of (spec ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([^=]+)=([^:]+):([^:]+):?(.*)$/.exec(entry);
    if (!m)
      throw Object.assign(
        new Error(`SCHED_API_KEYS entry "${entry}" must look like key=callerId:tenantId:perm|perm`),
        { code: 'SCHED_E_CONFIG' },
      );
    out.set(m[1]!, { id: m[2]!, tenantId: m[3]!, permissions: m[4]!.split('|').filter(Boolean) });
  }
  return out;
}
