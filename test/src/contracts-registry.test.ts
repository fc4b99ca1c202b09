/**
 * @sched/contracts against a real Confluent-compatible registry (Apicurio's ccompat API in the local
 * stack). Registry URL: the stack's own (`endpoints()`, from the stack's port settings), so a stack on
 * other ports is the one tested.
 *
 * Isolation: the real subjects (sched.commands-value, …) are only registered, which is idempotent;
 * every evolution experiment uses a subject of its own, unique per run.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import {
  checkBackwardCompatibility,
  COMMAND_CONTRACT,
  type Command,
  commandKey,
  CONTRACT_SCHEMAS,
  contractSamples,
  Contracts,
  createAvroType,
  releasedVersions,
  SUBJECTS,
} from '@sched/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpoints } from './support/isolation.js';

const registryUrl = endpoints().registryUrl.replace(/\/+$/, '');
const runId = randomUUID().slice(0, 8);
const createdSubjects = new Set<string>();
const uniqueSubject = (what: string): string => {
  const subject = `test-contracts-${what}-${runId}`;
  createdSubjects.add(subject);
  return subject;
};

/** Best effort: soft-delete, then permanently delete, every subject this run created. */
async function deleteCreatedSubjects(): Promise<void> {
  for (const subject of createdSubjects) {
    const url = `${registryUrl}/subjects/${encodeURIComponent(subject)}`;
    await fetch(url, { method: 'DELETE' }).catch(() => undefined);
    await fetch(`${url}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
  }
}

async function registryGet(path: string): Promise<unknown> {
  const response = await fetch(`${registryUrl}${path}`);
  expect(response.status, `GET ${path}`).toBe(200);
  return response.json();
}

/** A copy of the current Command schema with `edit` applied to the CreateJob branch's fields. */
function commandWithCreateJob(edit: (fields: { name: string }[]) => { name: string }[]): object {
  const schema = structuredClone(COMMAND_CONTRACT.schema) as unknown as {
    fields: { name: string; type: { name: string; fields: { name: string }[] }[] }[];
  };
  const createJob = schema.fields.find((f) => f.name === 'body')?.type.find((b) => b.name === 'CreateJob');
  if (createJob === undefined) throw new Error('CreateJob branch not found');
  createJob.fields = edit(createJob.fields);
  return schema;
}

/** A port nothing listens on: bind one, note it, close it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('contracts through the schema registry', () => {
  let writer: Contracts;
  let ids: Awaited<ReturnType<Contracts['registerAll']>>;

  beforeAll(async () => {
    writer = new Contracts({ registryUrl });
    ids = await writer.registerAll();
  });

  afterAll(deleteCreatedSubjects);

  it('registers every contract under its subject with BACKWARD compatibility, idempotently', async () => {
    expect(Object.keys(ids).sort()).toEqual(['command', 'dispatch', 'event', 'rejected']);
    for (const id of Object.values(ids)) expect(Number.isInteger(id) && id > 0).toBe(true);
    expect(await new Contracts({ registryUrl }).registerAll()).toEqual(ids);

    for (const contract of CONTRACT_SCHEMAS) {
      const subject = encodeURIComponent(contract.subject);
      expect(await registryGet(`/config/${subject}`)).toMatchObject({ compatibilityLevel: 'BACKWARD' });
      const latest = (await registryGet(`/subjects/${subject}/versions/latest`)) as {
        id: number;
        schema: string;
      };
      expect(latest.id).toBe(ids[contract.key]);
      // Same schema, as the registry prints it back (Avro's Java printer shortens some names).
      const stored = createAvroType(JSON.parse(latest.schema));
      expect(stored.equals(createAvroType(contract.schema))).toBe(true);
    }
    expect(SUBJECTS.dispatch).toBe('io.sched.v1.Dispatch');
  });

  it('round-trips every command kind, the dispatch record, the event and the rejection', async () => {
    // A reader with empty caches: every writer schema comes from the registry by id.
    const reader = new Contracts({ registryUrl });
    for (const command of [...contractSamples.FULL_COMMANDS]) {
      const bytes = writer.encodeCommand(command);
      expect(bytes.readInt32BE(1)).toBe(ids.command);
      expect(await reader.decodeCommand(bytes)).toEqual(command);
    }
    for (const command of contractSamples.MINIMAL_COMMANDS) {
      const decoded = await reader.decodeCommand(writer.encodeCommand(command));
      expect(decoded).toMatchObject(command);
      expect(commandKey(decoded)).toBe(commandKey(command));
    }
    expect(await reader.decodeDispatch(writer.encodeDispatch(contractSamples.FULL_DISPATCH))).toEqual(
      contractSamples.FULL_DISPATCH,
    );
    expect(await reader.decodeEvent(writer.encodeEvent(contractSamples.FULL_EVENT))).toEqual(
      contractSamples.FULL_EVENT,
    );
    expect(await reader.decodeRejected(writer.encodeRejected(contractSamples.FULL_REJECTED))).toEqual(
      contractSamples.FULL_REJECTED,
    );
    expect(
      await reader.decodeRejected(writer.encodeRejected(contractSamples.MINIMAL_REJECTED)),
    ).toMatchObject({
      ...contractSamples.MINIMAL_REJECTED,
      commandId: null,
      originalKey: null,
      originalValue: null,
    });
  });

  it('reads a record written with an older registered version, filling in the new defaults', async () => {
    const older = commandWithCreateJob((fields) =>
      fields.filter((f) => f.name !== 'jitterWindowMs' && f.name !== 'headers'),
    );
    const olderId = await writer.registerSchema(uniqueSubject('older'), older);
    expect(olderId).not.toBe(ids.command);
    const olderType = createAvroType(older);
    const { jitterWindowMs: _j, headers: _h, ...oldCreateJob } = contractSamples.FULL_BODIES.CreateJob;
    const body = Buffer.from(
      olderType.toBuffer({
        commandId: 'old-1',
        tenantId: 't',
        issuedAtMs: 1,
        body: { kind: 'CreateJob', value: oldCreateJob },
      }),
    );
    const header = Buffer.from([0, 0, 0, 0, 0]);
    header.writeInt32BE(olderId, 1);
    const decoded: Command = await new Contracts({ registryUrl }).decodeCommand(
      Buffer.concat([header, body]),
    );
    expect(decoded.body).toEqual({
      kind: 'CreateJob',
      value: { ...oldCreateJob, jitterWindowMs: 0, headers: {} },
    });
  });

  it('is refused by the registry when a change is incompatible under BACKWARD, and our check agrees', async () => {
    const subject = uniqueSubject('evolve');
    const v1 = await writer.registerSchema(subject, COMMAND_CONTRACT.schema);

    // A new required field in CreateJob: old records have no value for it.
    const required = commandWithCreateJob((fields) => [
      ...fields,
      { name: 'region', type: 'string' } as { name: string },
    ]);
    expect(checkBackwardCompatibility(required, COMMAND_CONTRACT.schema).compatible).toBe(false);
    const refusal = await writer.registerSchema(subject, required).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toMatchObject({ code: 'SCHED_E_SCHEMA_REFUSED', retriable: false, status: 409, subject });
    expect(String((refusal as Error).message)).toMatch(/incompatible/i);

    // The same field with a default is a compatible change: accepted as a new version.
    const optional = commandWithCreateJob((fields) => [
      ...fields,
      { name: 'region', type: ['null', 'string'], default: null } as { name: string },
    ]);
    expect(checkBackwardCompatibility(optional, COMMAND_CONTRACT.schema).compatible).toBe(true);
    const v2 = await writer.registerSchema(subject, optional);
    expect(v2).not.toBe(v1);
    const versions = (await registryGet(`/subjects/${encodeURIComponent(subject)}/versions`)) as number[];
    expect(versions).toHaveLength(2);
  });

  it('accepts the released history of every contract followed by the current schema', async () => {
    for (const contract of CONTRACT_SCHEMAS) {
      const subject = uniqueSubject(`history-${contract.name}`);
      for (const release of releasedVersions(contract.name))
        await writer.registerSchema(subject, release.schema);
      await expect(writer.registerSchema(subject, contract.schema)).resolves.toBeGreaterThan(0);
    }
  });

  it('fails an unknown schema id with SCHED_E_UNKNOWN_SCHEMA_ID, not retriable, and remembers it', async () => {
    let now = 1_000_000;
    const reader = new Contracts({ registryUrl, unknownSchemaIdTtlMs: 60_000, nowMs: () => now });
    const unknown = Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0, 0x02]);
    await expect(reader.decodeCommand(unknown)).rejects.toMatchObject({
      code: 'SCHED_E_UNKNOWN_SCHEMA_ID',
      retriable: false,
      schemaId: 0x7ffffff0,
    });
    // Remembered: the second failure needs no request, so it is immediate and carries no HTTP cause.
    const second = (await reader.decodeCommand(unknown).catch((error: unknown) => error)) as Error;
    expect(second).toMatchObject({ code: 'SCHED_E_UNKNOWN_SCHEMA_ID' });
    expect(second.cause).toBeUndefined();
    now += 60_001;
    const third = (await reader.decodeCommand(unknown).catch((error: unknown) => error)) as Error;
    expect(third).toMatchObject({ code: 'SCHED_E_UNKNOWN_SCHEMA_ID' });
    expect(third.cause).toBeDefined();
  });

  it("fails another subject's record with SCHED_E_INCOMPATIBLE_SCHEMA and garbage with SCHED_E_UNDECODABLE", async () => {
    const reader = new Contracts({ registryUrl });
    await expect(reader.decodeCommand(writer.encodeEvent(contractSamples.FULL_EVENT))).rejects.toMatchObject({
      code: 'SCHED_E_INCOMPATIBLE_SCHEMA',
      retriable: false,
      schemaId: ids.event,
    });
    const header = Buffer.from([0, 0, 0, 0, 0]);
    header.writeInt32BE(ids.command, 1);
    await expect(
      reader.decodeCommand(Buffer.concat([header, Buffer.from([0xff, 0xff, 0xff])])),
    ).rejects.toMatchObject({
      code: 'SCHED_E_UNDECODABLE',
      retriable: false,
    });
    await expect(reader.decodeCommand(Buffer.from('{"kind":"CreateJob"}'))).rejects.toMatchObject({
      code: 'SCHED_E_UNDECODABLE',
    });
  });

  it('reports an unreachable registry as SCHED_E_REGISTRY_UNAVAILABLE, retriable', async () => {
    const port = await closedPort();
    const offline = new Contracts({
      registryUrl: `http://127.0.0.1:${port}/apis/ccompat/v7`,
      registryRetries: 1,
    });
    await expect(
      offline.decodeCommand(writer.encodeCommand(contractSamples.FULL_COMMANDS[0] as Command)),
    ).rejects.toMatchObject({
      code: 'SCHED_E_REGISTRY_UNAVAILABLE',
      retriable: true,
    });
    await expect(offline.registerAll()).rejects.toMatchObject({
      code: 'SCHED_E_REGISTRY_UNAVAILABLE',
      retriable: true,
    });
  });
});
