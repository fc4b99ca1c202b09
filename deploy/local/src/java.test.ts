import { describe, expect, it } from 'vitest';
import { findJava, parseVersionBanner } from './java.js';

describe('Java discovery', () => {
  it('reads the major version from `java -version` banners', () => {
    expect(parseVersionBanner('openjdk version "17.0.15" 2025-04-15')).toBe(17);
    expect(parseVersionBanner('openjdk version "25" 2025-09-16')).toBe(25);
    expect(parseVersionBanner('java version "1.8.0_392"')).toBe(8);
    expect(parseVersionBanner('nothing here')).toBeUndefined();
  });

  it('fails with SCHED_E_STACK_NO_JAVA and the fix when nothing new enough exists', () => {
    try {
      findJava({ PATH: '/nonexistent' }, 99, 'Something', undefined, 'SCHED_JAVA_HOME');
      expect.unreachable();
    } catch (err) {
      expect((err as { code: string }).code).toBe('SCHED_E_STACK_NO_JAVA');
      expect((err as Error).message).toMatch(/Java 99 or newer is needed for Something/);
      expect((err as { fix: string }).fix).toMatch(/SCHED_JAVA_HOME/);
    }
  });
});
