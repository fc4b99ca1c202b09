import { dirname, join } from 'node:path';
import { StackError } from './errors.js';
import { cachedJar } from './java-jar.js';
import { PACKAGE_DIR } from './settings.js';

/**
 * The connector's record router (`java/smt/LogicalMessageRouter.java`): turns the outbox records the
 * store emits as logical decoding messages (store migrations 014 and 015) into the records they name.
 * Compiled against the Kafka release Connect runs, kept in the stack's cache, and put on Connect's
 * `plugin.path` beside Debezium.
 */
export const RECORD_ROUTER_SOURCE = join(PACKAGE_DIR, 'java', 'smt', 'LogicalMessageRouter.java');
export const RECORD_ROUTER_CLASS = 'sched.connect.LogicalMessageRouter';
export const RECORD_ROUTER_JAR = 'sched-connect-smt.jar';

/**
 * The `plugin.path` entry holding the router's jar, built if missing. Unlike the poll-timer agent
 * the router is not optional: without it no dispatch record reaches Kafka, so a failed build stops
 * the start with what to do.
 */
export function recordRouterPluginDir(
  cacheDir: string,
  java: string,
  kafkaLibDir: string,
  kafkaVersion: string,
  say: (line: string) => void,
): string {
  try {
    const { path, built } = cachedJar(cacheDir, java, {
      name: 'sched-connect-smt',
      jar: RECORD_ROUTER_JAR,
      sources: [RECORD_ROUTER_SOURCE],
      classpath: join(kafkaLibDir, '*'),
      digestOf: `kafka ${kafkaVersion}`,
      // Connect finds plugins through ServiceLoader (plugin.discovery=service_load).
      resources: {
        'META-INF/services/org.apache.kafka.connect.transforms.Transformation': `${RECORD_ROUTER_CLASS}\n`,
      },
    });
    if (built) say(`connect: built the record router (${path})`);
    return dirname(path);
  } catch (err) {
    throw new StackError(
      'SCHED_E_STACK_START_FAILED',
      `connect: could not build the record router ${RECORD_ROUTER_CLASS}: ${(err as Error).message}`,
      'Connect must run on a JDK (javac and jar next to java): set SCHED_JAVA_HOME or JAVA_HOME to one',
      false,
      { cause: err },
    );
  }
}
