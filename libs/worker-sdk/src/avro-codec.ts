import { randomUUID } from 'node:crypto';
import type { Contracts } from '@sched/contracts';
import type { WorkerCodec } from './types.js';

/** The worker codec over the Avro contracts (dispatch records in, AttemptResult commands out). */
export function avroWorkerCodec(contracts: Contracts): WorkerCodec {
  return {
    async decodeDispatch(value) {
      return contracts.decodeDispatch(value);
    },
    encodeEvent(e) {
      return contracts.encodeEvent(e);
    },
    encodeAttemptResult(r) {
      const { tenantId, ...body } = r;
      return contracts.encodeCommand({
        commandId: randomUUID(),
        tenantId,
        issuedAtMs: Date.now(),
        body: { kind: 'AttemptResult', value: body },
      });
    },
  };
}
