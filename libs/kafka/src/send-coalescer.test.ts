import { describe, expect, it } from 'vitest';
import { SendCoalescer, type TopicMessages } from './send-coalescer.js';

const msg = (v: string) => ({ key: null, value: Buffer.from(v) });

describe('SendCoalescer', () => {
  it('sends concurrent single sends as one request, in order, and resolves each caller', async () => {
    const requests: TopicMessages[][] = [];
    const c = new SendCoalescer(async (batch) => {
      requests.push(batch);
    }, 0);
    await Promise.all([c.send('a', [msg('1')]), c.send('b', [msg('x')]), c.send('a', [msg('2')])]);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.map((t) => [t.topic, t.messages.map((m) => m.value!.toString())])).toEqual([
      ['a', ['1', '2']],
      ['b', ['x']],
    ]);
  });

  it('keeps one request in flight and batches what arrives meanwhile', async () => {
    let inFlight = 0;
    let peak = 0;
    const sizes: number[] = [];
    const c = new SendCoalescer(async (batch) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      sizes.push(batch.reduce((n, t) => n + t.messages.length, 0));
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
    }, 0);
    const first = c.send('t', [msg('0')]);
    await new Promise((r) => setImmediate(r));
    const rest = Array.from({ length: 50 }, (_, i) => c.send('t', [msg(String(i + 1))]));
    await Promise.all([first, ...rest]);
    expect(peak).toBe(1);
    expect(sizes).toEqual([1, 50]);
  });

  it('rejects every caller of a failed request, then keeps working', async () => {
    let fail = true;
    const c = new SendCoalescer(async () => {
      if (fail) throw new Error('broker down');
    }, 1);
    const r = await Promise.allSettled([c.send('t', [msg('a')]), c.send('t', [msg('b')])]);
    expect(r.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(c.send('t', [msg('c')])).resolves.toBeUndefined();
  });

  it('caps a request at maxMessages but never splits one caller', async () => {
    const sizes: number[] = [];
    const c = new SendCoalescer(
      async (batch) => {
        sizes.push(batch.reduce((n, t) => n + t.messages.length, 0));
      },
      0,
      3,
    );
    await Promise.all([
      c.send('t', [msg('1'), msg('2')]),
      c.send('t', [msg('3'), msg('4')]),
      c.send('t', [msg('5')]),
    ]);
    expect(sizes).toEqual([2, 3]);
  });
});
