import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** The last `lines` lines of a text file ('' if it does not exist). Reads at most the last 256 KiB. */
export function tailFile(path: string, lines: number): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return '';
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, 256 * 1024);
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, size - length);
    const all = buf.toString('utf8').split('\n');
    if (all.at(-1) === '') all.pop();
    return all.slice(-lines).join('\n');
  } finally {
    closeSync(fd);
  }
}

/**
 * log4j2 configuration for the broker and the Connect worker: everything to stdout (which the
 * stack appends to `logs/<service>.log`), INFO, with the chattiest loggers turned down.
 */
export const LOG4J2_PROPERTIES = `# Written by deploy/local on every start.
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d{ISO8601}] %p %m (%c{1})%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.kafkaRequest.name = kafka.request.logger
logger.kafkaRequest.level = warn
logger.reflections.name = org.reflections
logger.reflections.level = error
logger.clients.name = org.apache.kafka.clients
logger.clients.level = warn
logger.connectConfig.name = org.apache.kafka.common.config.AbstractConfig
logger.connectConfig.level = warn
`;
