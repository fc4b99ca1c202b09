import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { portIsFree, requireFreePort } from './ports.js';
import { waitFor } from './wait.js';

describe('ports', () => {
  it('says which port is taken, by what, and which variable moves it', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      expect(await portIsFree(port)).toBe(false);
      const err = await requireFreePort('kafkaPort', port, 'Kafka').catch((e: unknown) => e);
      expect((err as { code: string }).code).toBe('SCHED_E_STACK_PORT_IN_USE');
      expect((err as Error).message).toContain(`port ${port} (Kafka) on 127.0.0.1 is already in use`);
      expect((err as { fix: string }).fix).toContain('SCHED_KAFKA_PORT=<free port>');
    } finally {
      await new Promise((r) => server.close(r));
    }
    expect(await portIsFree(port)).toBe(true);
  });
});

describe('waitFor', () => {
  it('gives up after its timeout with the last reason, never hangs', async () => {
    const t0 = Date.now();
    const err = await waitFor(
      async (why) => {
        why('still starting');
        return undefined;
      },
      { what: 'a thing', timeoutMs: 300, intervalMs: 50, fix: 'look at the log' },
    ).catch((e: unknown) => e);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect((err as { code: string }).code).toBe('SCHED_E_STACK_TIMEOUT');
    expect((err as Error).message).toMatch(/waiting for a thing \(last: still starting\)/);
  });
});
