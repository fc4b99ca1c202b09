import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { murmur2, partitionForKey } from './murmur2.js';

const require = createRequire(import.meta.url);
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js') as (
  key: Buffer,
) => number;

describe('murmur2', () => {
  it('is the hash kafkajs (and the Java client) computes, for any key', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const key = Buffer.from(bytes);
        expect(murmur2(key)).toBe(kafkajsMurmur2(key));
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives the partitions the Java client gives (known values)', () => {
    // Values of org.apache.kafka.common.utils.Utils.murmur2 as published in Kafka's own tests.
    expect(murmur2(Buffer.from('21'))).toBe(-973932308);
    expect(murmur2(Buffer.from('foobar'))).toBe(-790332482);
    expect(partitionForKey('job-1', 12)).toBe((kafkajsMurmur2(Buffer.from('job-1')) & 0x7fffffff) % 12);
  });

  it('agrees on a long key too', () => {
    const key = Buffer.from(Array.from({ length: 30_000 }, (_, i) => (i * 7919) & 255));
    expect(murmur2(key)).toBe(kafkajsMurmur2(key));
  });
});
