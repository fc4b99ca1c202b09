import { isContractsError, rejectionReasonFor, type Command, type Contracts } from '@sched/contracts';
import { CommandRejection, RejectReason, toEngine, type SchedulerCodec } from '@sched/command-rules';

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
