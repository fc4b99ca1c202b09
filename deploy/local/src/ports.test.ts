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

describe('ports held by a connection, not a listener', () => {
  // Our ports lie in Linux's ephemeral range: a client connection elsewhere can leave one in
  // TIME_WAIT, refusing the bind for up to a minute with nobody listening.
  const probe = (freeAfter: number, listener: boolean | undefined) => {
    let looks = 0;
    return {
      isFree: async () => ++looks > freeAfter,
      hasListener: () => listener,
      pauseMs: 5,
      get looks() {
        return looks;
      },
    };
  };

  it('waits for the port to free up instead of failing the start', async () => {
    const p = probe(3, false);
    await expect(requireFreePort('pgPort', 55432, 'Postgres', 5_000, p)).resolves.toBeUndefined();
    expect(p.looks).toBe(4);
  });

  it('fails at once when something listens, and after the wait when the port never frees', async () => {
    const listening = probe(1_000, true);
    const err = await requireFreePort('pgPort', 55432, 'Postgres', 5_000, listening).catch((e: unknown) => e);
    expect((err as { code: string }).code).toBe('SCHED_E_STACK_PORT_IN_USE');
    expect(listening.looks).toBe(1);
    const stuck = await requireFreePort('pgPort', 55432, 'Postgres', 50, probe(1_000, false)).catch(
      (e: unknown) => e,
    );
    expect((stuck as Error).message).toContain('port 55432 (Postgres)');
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
