import { isContractsError, rejectionReasonFor, type Command, type Contracts } from '@sched/contracts';
import { CommandRejection, RejectReason, type SchedulerCodec, type SchedulerCommand } from './commands.js';

/**
 * The scheduler codec over the Avro contracts: maps the `Command` envelope onto engine commands
 * and turns decode errors that are the record's fault into rejections. A registry outage is
 * retriable and is rethrown, so the batch is fetched again rather than rejected.
 */
export function avroSchedulerCodec(contracts: Contracts): SchedulerCodec {
  return {
    async decodeCommand(value) {
      let cmd: Command;
      try {
        cmd = await contracts.decodeCommand(value);
      } catch (err) {
        if (isContractsError(err)) {
          const reason = rejectionReasonFor(err);
          if (reason) throw new CommandRejection(reason, err.message);
          if (err.code === 'SCHED_E_INVALID_MESSAGE')
            throw new CommandRejection(RejectReason.INVALID_FIELD, err.message);
        }
        throw err;
      }
      return toEngine(cmd);
    },
    encodeDispatch(d) {
      return contracts.encodeDispatch(d);
    },
    dispatchHeader() {
      return contracts.dispatchHeader();
    },
    async dispatchClaimedAt(value) {
      return (await contracts.decodeDispatch(value)).claimedAtMs;
    },
    encodeEvent(e) {
      return contracts.encodeEvent(e);
    },
    encodeRejected(r) {
      return contracts.encodeRejected({
        ...r,
        originalKeyBytes: r.originalKeyBytes ?? null,
        originalValueBytes: r.originalValueBytes ?? null,
        commandId: null,
        tenantId: null,
      });
    },
  };
}

function toEngine(cmd: Command): SchedulerCommand {
  const base = { commandId: cmd.commandId, tenantId: cmd.tenantId, callerId: cmd.callerId ?? null };
  const b = cmd.body;
  switch (b.kind) {
    case 'CreateJob':
      return { kind: 'CreateJob', ...base, ...b.value };
    case 'CancelJob':
      return { kind: 'CancelJob', ...base, jobId: b.value.jobId, reason: b.value.reason };
    case 'RescheduleJob':
      return { kind: 'RescheduleJob', ...base, ...b.value };
    case 'AttemptResult':
      return {
        kind: 'AttemptResult',
        ...base,
        jobId: b.value.jobId,
        attempt: b.value.attempt,
        outcome: b.value.outcome,
      };
    case 'UpsertSchedule': {
      const { jobTemplate: t, ...rest } = b.value;
      return {
        kind: 'UpsertSchedule',
        ...base,
        ...rest,
        payload: t.payload,
        priority: t.priority,
        headers: t.headers,
        maxAttempts: t.maxAttempts,
        executionTimeoutMs: t.executionTimeoutMs,
        retryPolicy: t.retryPolicy,
      };
    }
    case 'PauseSchedule':
    case 'ResumeSchedule':
    case 'DeleteSchedule':
      return { kind: b.kind, ...base, scheduleId: b.value.scheduleId };
  }
}
