import { describe, expect, it } from 'vitest';
import { distributionDirs, recipeVersions } from './distributions.js';
import { stackSettings } from './settings.js';

describe('the recipe', () => {
  it('pins the versions the notes verified', () => {
    expect(recipeVersions()).toEqual({
      kafka: '4.3.1',
      log4j: '2.24.3',
      debezium: '3.6.1.Final',
      apicurio: '3.3.3',
    });
  });

  it('caches each part under the user cache, keyed by version', () => {
    const d = distributionDirs(stackSettings({ HOME: '/h' }));
    expect(d.kafkaLibDir).toMatch(/^\/h\/\.cache\/sched-stack\/kafka-4\.3\.1-[0-9a-f]{8}\/lib$/);
    expect(d.debeziumPluginPath).toBe('/h/.cache/sched-stack/debezium-connector-postgres-3.6.1.Final');
    expect(d.apicurioDir).toBe('/h/.cache/sched-stack/apicurio-registry-3.3.3');
  });

  it('changes the Kafka key when the dependency list changes', () => {
    const pom = (extra: string): string =>
      `<kafka.version>4.3.1</kafka.version><log4j.version>2</log4j.version><debezium.version>3</debezium.version><apicurio.version>3</apicurio.version><dependencies>${extra}</dependencies>`;
    const s = stackSettings({ HOME: '/h' });
    expect(distributionDirs(s, pom('a')).kafkaLibDir).not.toBe(distributionDirs(s, pom('b')).kafkaLibDir);
  });
});
