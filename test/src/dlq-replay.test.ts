import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deadLetterGet,
  REPLAY_PERMISSION,
  REPLAY_QUARANTINED_PERMISSION,
  registryPayloadValidator,
  replayDeadLetters,
  ReplayError,
  type PayloadValidator,
} from '@sched/dead-letters';
import { jobComplete } from '@sched/store';
import { endpoints, isolatedSchema, type IsolatedSchema } from './support/isolation.js';

const operator = { id: 'alice@ops', tenantId: 'default', permissions: [REPLAY_PERMISSION] };

describe('DLQ governance: authorised, audited, rate-limited, schema-checked replay', () => {
  let db: IsolatedSchema;
  let validator: PayloadValidator;
  let v1Id = 0;
  const subject = `t-dlq-${randomUUID().slice(0, 8)}-value`;
  const registry = endpoints().registryUrl;

  const registerSchema = async (schema: object): Promise<number> => {
    const res = await fetch(`${registry}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema: JSON.stringify(schema) }),
    });
    const body = (await res.json()) as { id: number };
    if (!res.ok) throw new Error(`register failed: ${JSON.stringify(body)}`);
    return body.id;
  };
  const framed = (id: number, body: Buffer) => {
    const h = Buffer.alloc(5);
    h.writeUInt32BE(id, 1);
    return Buffer.concat([h, body]);
  };

  /** A job that ran `attempts` times and died with `error`, as the worker leaves it. */
  const deadJob = async (
    jobId: string,
    queue: string,
    payload: Buffer,
    error = 'PermanentFailure: invalid account 42',
  ) => {
    await db.pool.query(
      `INSERT INTO job (job_id, partition, tenant_id, queue, state, due_at, payload, attempt, lease_owner, lease_generation, lease_until,
                        lease_check_at)
       VALUES ($1, 0, 'default', $2, 'RUNNING', now(), $3, 1, 'w1', 1, now() + interval '1 minute', now() + interval '1 minute')`,
      [jobId, queue, payload],
    );
    await dieAgain(jobId, error);
  };
  const dieAgain = async (jobId: string, error: string) => {
    const attemptId = randomUUID();
    const { rows } = await db.pool.query<{ gen: number }>(
      `UPDATE job SET state = 'RUNNING', lease_owner = 'w1', lease_generation = lease_generation + 1,
                      lease_until = now() + interval '1 minute', lease_check_at = now() + interval '1 minute',
                      attempt = attempt + 1, attempt_id = $2, started_at = now()
       WHERE job_id = $1 RETURNING lease_generation AS gen`,
      [jobId, attemptId],
    );
    const ok = await jobComplete(
      db.pool,
      { jobId, owner: 'w1', generation: rows[0]!.gen, attemptId },
      {
        outcome: 'FAILED',
        failureClass: 'PERMANENT',
        error,
        retryAtMs: null,
        deadLetter: { fingerprint: `PERMANENT:${error.replace(/\d+/g, '<n>')}`, poisonAfterReplays: 2 },
      },
    );
    expect(ok).toBe(true);
  };
  const audits = async () =>
    (
      await db.pool.query<{ actor: string; reason: string; count: number; subject: { jobIds: string[] } }>(
        'SELECT * FROM audit_log ORDER BY at',
      )
    ).rows;
  const state = async (jobId: string) =>
    (await db.pool.query<{ state: string }>('SELECT state FROM job WHERE job_id = $1', [jobId])).rows[0]
      ?.state;

  beforeAll(async () => {
    db = await isolatedSchema('dlq');
    validator = registryPayloadValidator(db.pool, registry);
    v1Id = await registerSchema({
      type: 'record',
      name: 'Payment',
      fields: [{ name: 'amount', type: 'int' }],
    });
    await db.pool.query(
      "INSERT INTO queue (queue, payload_subject) VALUES ('payments', $1), ('opaque', NULL)",
      [subject],
    );
  });
  afterAll(async () => {
    await fetch(`${registry}/subjects/${subject}`, { method: 'DELETE' }).catch(() => undefined);
    await db?.drop();
  });

  it('refuses a replay without permission or without a reason, and writes no audit row', async () => {
    await deadJob('d-1', 'opaque', Buffer.from('{}'));
    await expect(
      replayDeadLetters(db.pool, validator, {
        caller: { id: 'bob', tenantId: 'default', permissions: [] },
        jobIds: ['d-1'],
        reason: 'retry it',
        ratePerSec: 10,
      }),
    ).rejects.toMatchObject({
      code: 'SCHED_E_REPLAY_FORBIDDEN',
    });
    await expect(
      replayDeadLetters(db.pool, validator, {
        caller: operator,
        jobIds: ['d-1'],
        reason: ' ',
        ratePerSec: 10,
      }),
    ).rejects.toBeInstanceOf(ReplayError);
    expect(await audits()).toEqual([]);
    expect(await state('d-1')).toBe('DEAD');
  });

  it('replays through the rate-limited path with the original id, and audits it in the same transaction', async () => {
    for (let i = 2; i <= 5; i++) await deadJob(`d-${i}`, 'opaque', Buffer.from('{}'));
    const res = await replayDeadLetters(db.pool, validator, {
      caller: operator,
      jobIds: ['d-2', 'd-3', 'd-4', 'd-5', 'never-died'],
      reason: 'provider outage fixed (INC-42)',
      ratePerSec: 2,
    });
    expect(res.replayed).toEqual(['d-2', 'd-3', 'd-4', 'd-5']);
    expect(res.refused).toEqual([
      expect.objectContaining({ jobId: 'never-died', code: 'NOT_DEAD_LETTERED' }),
    ]);
    const { rows } = await db.pool.query<{ job_id: string; state: string; gap_ms: number | null }>(
      `SELECT job_id, state, (extract(epoch FROM due_at - lag(due_at) OVER (ORDER BY due_at)) * 1000)::float8 AS gap_ms
       FROM job WHERE job_id IN ('d-2','d-3','d-4','d-5') ORDER BY due_at`,
    );
    expect(rows.every((r) => r.state === 'SCHEDULED')).toBe(true);
    // 2 per second: released 500 ms apart by the ordinary claim path.
    for (const r of rows.slice(1)) expect(r.gap_ms).toBeCloseTo(500, 0);
    const a = await audits();
    expect(a).toHaveLength(1);
    expect(a[0]).toMatchObject({ actor: 'alice@ops', reason: 'provider outage fixed (INC-42)', count: 4 });
    expect(a[0]!.subject.jobIds).toEqual(['d-2', 'd-3', 'd-4', 'd-5']);
    const view = await deadLetterGet(db.pool, 'd-2', 'default');
    expect(view?.replayCount).toBe(1);
    expect(view?.history).toHaveLength(1); // the failed attempt is kept; the replay will add its own
  });

  it('refuses a payload the queue’s current schema cannot read, with the reason', async () => {
    await deadJob('p-old', 'payments', framed(v1Id, Buffer.from([0x54]))); // amount = 42, written with v1
    await fetch(`${registry}/config/${subject}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ compatibility: 'NONE' }),
    });
    await registerSchema({
      type: 'record',
      name: 'Payment',
      fields: [
        { name: 'amount', type: 'int' },
        { name: 'currency', type: 'string' },
      ],
    });
    const before = (await audits()).length;
    const res = await replayDeadLetters(db.pool, validator, {
      caller: operator,
      jobIds: ['p-old'],
      reason: 'try again',
      ratePerSec: 10,
    });
    expect(res.replayed).toEqual([]);
    expect(res.refused[0]).toMatchObject({ jobId: 'p-old', code: 'INCOMPATIBLE_PAYLOAD' });
    expect(res.refused[0]!.reason).toMatch(/currency/);
    expect(await audits()).toHaveLength(before);
    expect(await state('p-old')).toBe('DEAD');
  });

  it('quarantines a poison job that fails the same way after N replays', async () => {
    await deadJob('poison', 'opaque', Buffer.from('{}'), 'PermanentFailure: invalid account 7');
    for (let round = 1; round <= 2; round++) {
      const r = await replayDeadLetters(db.pool, validator, {
        caller: operator,
        jobIds: ['poison'],
        reason: `round ${round}`,
        ratePerSec: 10,
      });
      expect(r.replayed).toEqual(['poison']);
      await dieAgain('poison', `PermanentFailure: invalid account ${7 + round}`); // same fingerprint
    }
    expect((await deadLetterGet(db.pool, 'poison', 'default'))?.quarantined).toBe(true);
    const refused = await replayDeadLetters(db.pool, validator, {
      caller: operator,
      jobIds: ['poison'],
      reason: 'again',
      ratePerSec: 10,
    });
    expect(refused.refused[0]).toMatchObject({ code: 'QUARANTINED' });
    await expect(
      replayDeadLetters(db.pool, validator, {
        caller: operator,
        jobIds: ['poison'],
        reason: 'manual override',
        ratePerSec: 10,
        includeQuarantined: true,
      }),
    ).rejects.toMatchObject({ code: 'SCHED_E_REPLAY_FORBIDDEN' });
    const forced = await replayDeadLetters(db.pool, validator, {
      caller: {
        id: 'lead@ops',
        tenantId: 'default',
        permissions: [REPLAY_PERMISSION, REPLAY_QUARANTINED_PERMISSION],
      },
      jobIds: ['poison'],
      reason: 'manual override after fixing the account',
      ratePerSec: 10,
      includeQuarantined: true,
    });
    expect(forced.replayed).toEqual(['poison']);
  });
});
