import avro from 'avsc';
import type pg from 'pg';
import { MAGIC_BYTE, HEADER_BYTES } from '@sched/contracts';
import type { PayloadCheck, PayloadValidator } from './replay.js';

/**
 * Validates a dead letter's payload against the current schema of its queue: the queue's
 * `payload_subject` names a registry subject; the payload must be Confluent-framed Avro whose
 * writer schema the subject's latest version can read (BACKWARD resolution), and whose bytes decode.
 * A queue without a subject accepts any payload (opaque bytes: nothing to check against).
 */
export function registryPayloadValidator(pool: pg.Pool, registryUrl: string): PayloadValidator {
  const base = registryUrl.replace(/\/+$/, '');
  const getJson = async (path: string): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(base + path);
    return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
  };
  return {
    async validate(queue: string, payload: Buffer): Promise<PayloadCheck> {
      const { rows } = await pool.query<{ payload_subject: string | null }>(
        'SELECT payload_subject FROM queue WHERE queue = $1',
        [queue],
      );
      const subject = rows[0]?.payload_subject;
      if (!subject) return { ok: true };
      if (payload.length < HEADER_BYTES || payload[0] !== MAGIC_BYTE) {
        return {
          ok: false,
          reason: `payload is not Confluent-framed Avro, but queue ${queue} requires subject ${subject}`,
        };
      }
      const writerId = payload.readUInt32BE(1);
      const latest = await getJson(`/subjects/${encodeURIComponent(subject)}/versions/latest`);
      if (latest.status !== 200)
        return {
          ok: false,
          reason: `subject ${subject} has no schema in the registry (HTTP ${latest.status})`,
        };
      const writer = await getJson(`/schemas/ids/${writerId}`);
      if (writer.status !== 200)
        return {
          ok: false,
          reason: `payload was written with schema id ${writerId}, which the registry does not know`,
        };
      try {
        const readerType = avro.Type.forSchema(JSON.parse(String(latest.body.schema)) as avro.Schema);
        const writerType = avro.Type.forSchema(JSON.parse(String(writer.body.schema)) as avro.Schema);
        let resolver;
        try {
          resolver = readerType.createResolver(writerType);
        } catch (err) {
          return {
            ok: false,
            reason: `payload schema id ${writerId} is not readable by the current ${subject} (v${String(latest.body.version)}): ${(err as Error).message}`,
          };
        }
        readerType.fromBuffer(payload.subarray(HEADER_BYTES), resolver, false);
        return { ok: true };
      } catch (err) {
        return { ok: false, reason: `payload does not decode as ${subject}: ${(err as Error).message}` };
      }
    },
  };
}
