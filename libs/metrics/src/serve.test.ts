import { afterEach, describe, expect, it } from 'vitest';
import client from 'prom-client';
import { serveMetrics } from './index.js';

describe('serveMetrics', () => {
  const g = globalThis as { gc?: () => void };
  const saved = g.gc;
  let close: (() => Promise<void>) | null = null;

  afterEach(async () => {
    g.gc = saved;
    await close?.();
    close = null;
  });

  async function start() {
    const { server, port } = await serveMetrics(new client.Registry(), 0);
    close = () => new Promise<void>((r) => server.close(() => r()));
    return `http://127.0.0.1:${port}`;
  }

  it('POST /debug/gc collects and reports the live heap when node exposes gc', async () => {
    let calls = 0;
    g.gc = () => {
      calls++;
    };
    const base = await start();
    const res = await fetch(`${base}/debug/gc`, { method: 'POST' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { heapUsedBytes: number };
    expect(body.heapUsedBytes).toBeGreaterThan(0);
    expect(calls).toBe(1);
  });

  it('says how to enable it when node does not expose gc, and GET does nothing', async () => {
    g.gc = undefined;
    const base = await start();
    const res = await fetch(`${base}/debug/gc`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(await res.text()).toMatch(/--expose-gc/);
    expect((await fetch(`${base}/debug/gc`)).status).toBe(404);
  });
});
