import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BATCH_OVERHEAD_BYTES,
  maxRecordBytes,
  packRequests,
  recordBytesUpperBound,
  type Placed,
  type ProduceLimits,
} from './record-packing.js';

const place = (topic: string, partition: number, size: number, i: number): Placed => {
  const message = { key: `k${i}`, value: Buffer.alloc(size), headers: { reason: 'X' } };
  return { topic, partition, message, bytes: recordBytesUpperBound(message) };
};

describe('packRequests', () => {
  it('keeps every partition batch and every request under the limits, in order, nothing lost', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            topic: fc.constantFrom('a', 'b'),
            partition: fc.integer({ min: 0, max: 3 }),
            size: fc.integer({ min: 0, max: 20_000 }),
          }),
          { maxLength: 300 },
        ),
        fc.integer({ min: 25_000, max: 200_000 }),
        fc.integer({ min: 1, max: 50 }),
        (specs, maxBatchBytes, maxMessages) => {
          const limits: ProduceLimits = { maxBatchBytes, maxRequestBytes: maxBatchBytes * 3 };
          const records = specs.map((r, i) => place(r.topic, r.partition, r.size, i));
          const requests = packRequests(records, () => limits, maxMessages);
          expect(requests.flat()).toEqual(records);
          for (const req of requests) {
            expect(req.length).toBeLessThanOrEqual(maxMessages);
            const batches = new Map<string, number>();
            for (const r of req) {
              const k = `${r.topic}/${r.partition}`;
              batches.set(k, (batches.get(k) ?? BATCH_OVERHEAD_BYTES) + r.bytes);
            }
            for (const b of batches.values()) expect(b).toBeLessThanOrEqual(limits.maxBatchBytes);
            const total = [...batches.values()].reduce((x, y) => x + y, 0);
            expect(total).toBeLessThanOrEqual(limits.maxRequestBytes);
          }
        },
      ),
    );
  });

  it('splits 1,200 records of 2 KB on one partition into requests under 1 MB (the wedge of issue 52)', () => {
    const limits = { maxBatchBytes: 1_048_588, maxRequestBytes: 104_857_600 };
    const records = Array.from({ length: 1_200 }, (_, i) => place('rejected', 2, 2_300, i));
    const requests = packRequests(records, () => limits, 10_000);
    expect(requests.length).toBe(3);
    expect(requests.flat().length).toBe(1_200);
  });

  it('gives a record that fills a batch a request of its own', () => {
    const limits = { maxBatchBytes: 1_000_000, maxRequestBytes: 104_857_600 };
    const big = maxRecordBytes(limits) - 36 - 12 - 'k0'.length - 'reason'.length - 1;
    const records = [place('t', 0, big, 0), place('t', 0, 10, 1), place('t', 1, 10, 2)];
    expect(records[0]!.bytes).toBeLessThanOrEqual(maxRecordBytes(limits));
    expect(packRequests(records, () => limits, 100).map((r) => r.length)).toEqual([1, 2]);
  });
});
