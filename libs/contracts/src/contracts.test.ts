import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { MINIMAL_COMMANDS } from './contract-samples';
import { Contracts } from './contracts';
import { CONTRACTS_ERROR_CODES, ContractsError, isContractsError } from './contracts-error';
import type { CommandInput } from './generated-types';
import { RejectionReason, rejectionReasonFor } from './rejection-reasons';

// The registry round trips are proven in test/src/contracts-registry.test.ts against a real
// registry; these cover what needs none.
describe('Contracts', () => {
  it('validates its options with actionable messages', () => {
    for (const registryUrl of ['localhost:8081', '127.0.0.1 8081', 'ftp://x/']) {
      expect(() => new Contracts({ registryUrl })).toThrow(
        /must be an http\(s\) URL such as http:\/\/127\.0\.0\.1:8081/,
      );
    }
    expect(() => new Contracts({ registryUrl: 'http://x', unknownSchemaIdTtlMs: -1 })).toThrow(
      /unknownSchemaIdTtlMs/,
    );
    expect(() => new Contracts({ registryUrl: 'http://x', registryRetries: 1.5 })).toThrow(/registryRetries/);
    expect(() => new Contracts({ registryUrl: 'http://x', registryTimeoutMs: 0 })).toThrow(
      /registryTimeoutMs/,
    );
  });

  it('refuses to encode before registerAll, without any request', () => {
    const contracts = new Contracts({ registryUrl: 'http://127.0.0.1:1/apis/ccompat/v7' });
    expect(() => contracts.encodeCommand(MINIMAL_COMMANDS[0] as CommandInput)).toThrow(
      expect.objectContaining({ code: 'SCHED_E_NOT_REGISTERED', retriable: false }),
    );
    expect(contracts.schemaIds()).toEqual({});
  });

  it('rejects garbage before any request, as SCHED_E_UNDECODABLE', async () => {
    const contracts = new Contracts({ registryUrl: 'http://127.0.0.1:1/apis/ccompat/v7' });
    await expect(contracts.decodeCommand(Buffer.from('not avro'))).rejects.toMatchObject({
      code: 'SCHED_E_UNDECODABLE',
      retriable: false,
    });
    await expect(contracts.decodeEvent(null)).rejects.toMatchObject({ code: 'SCHED_E_UNDECODABLE' });
  });

  it('refuses an invalid schema before any request', async () => {
    const contracts = new Contracts({ registryUrl: 'http://127.0.0.1:1/apis/ccompat/v7' });
    await expect(
      contracts.registerSchema('s', { type: 'record', name: 'X', fields: [{ name: 'a', type: 'nope' }] }),
    ).rejects.toMatchObject({ code: 'SCHED_E_SCHEMA_REFUSED' });
  });
});

describe('ContractsError', () => {
  it('carries the code, its retriable flag and details', () => {
    const error = new ContractsError('SCHED_E_REGISTRY_UNAVAILABLE', 'down', { schemaId: 3, status: 503 });
    expect(error).toBeInstanceOf(Error);
    expect([error.name, error.code, error.retriable, error.schemaId, error.status]).toEqual([
      'ContractsError',
      'SCHED_E_REGISTRY_UNAVAILABLE',
      true,
      3,
      503,
    ]);
    expect(error.message).toBe('SCHED_E_REGISTRY_UNAVAILABLE: down');
    expect(isContractsError(error, 'SCHED_E_UNDECODABLE')).toBe(false);
  });

  it('maps exactly the non-retriable decode errors to rejection reasons', () => {
    const reasons = Object.keys(CONTRACTS_ERROR_CODES).map((code) => [
      code,
      rejectionReasonFor(new ContractsError(code as keyof typeof CONTRACTS_ERROR_CODES, '')),
    ]);
    expect(reasons).toEqual([
      ['SCHED_E_UNDECODABLE', RejectionReason.UNDECODABLE],
      ['SCHED_E_UNKNOWN_SCHEMA_ID', RejectionReason.UNKNOWN_SCHEMA_ID],
      ['SCHED_E_INCOMPATIBLE_SCHEMA', RejectionReason.INCOMPATIBLE_SCHEMA],
      ['SCHED_E_REGISTRY_UNAVAILABLE', undefined],
      ['SCHED_E_SCHEMA_REFUSED', undefined],
      ['SCHED_E_INVALID_MESSAGE', undefined],
      ['SCHED_E_NOT_REGISTERED', undefined],
    ]);
  });
});

/**
 * A registry stand-in on 127.0.0.1 that answers like the Confluent API, except that it never answers
 * the schema POSTs `hang` picks (the real registry did so once, to one of two schedulers starting
 * together). The real registry's answers are proven in test/src/contracts-registry.test.ts.
 */
async function withSilentRegistry(
  hang: (subject: string, posts: number) => boolean,
  body: (url: string) => Promise<void>,
): Promise<void> {
  const posts = new Map<string, number>();
  const held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const json = (value: unknown) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      const path = decodeURIComponent(req.url ?? '');
      const post = /\/subjects\/(.+)\/versions$/.exec(path);
      if (req.method === 'POST' && post) {
        const subject = post[1]!;
        const n = (posts.get(subject) ?? 0) + 1;
        posts.set(subject, n);
        if (hang(subject, n)) {
          held.push(res);
          return;
        }
        json({ id: 100 + [...posts.keys()].indexOf(subject) });
      } else if (req.method === 'PUT') json({ compatibility: 'BACKWARD' });
      else json({ compatibilityLevel: 'BACKWARD' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await body(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('Contracts.registerAll against a registry that does not answer', () => {
  it('aborts a request left unanswered and registers again', async () => {
    await withSilentRegistry(
      (subject, n) => subject === 'io.sched.v1.Dispatch' && n === 1,
      async (url) => {
        const contracts = new Contracts({ registryUrl: url, registryTimeoutMs: 300 });
        const ids = await contracts.registerAll();
        expect(Object.keys(ids).sort()).toEqual(['command', 'dispatch', 'event', 'rejected']);
      },
    );
  });

  it('gives up after registryRetries with SCHED_E_REGISTRY_UNAVAILABLE, never hanging', async () => {
    await withSilentRegistry(
      (subject) => subject === 'io.sched.v1.Dispatch',
      async (url) => {
        const contracts = new Contracts({ registryUrl: url, registryTimeoutMs: 200, registryRetries: 1 });
        await expect(contracts.registerAll()).rejects.toMatchObject({
          code: 'SCHED_E_REGISTRY_UNAVAILABLE',
          retriable: true,
        });
      },
    );
  });
});
