import type { Command } from '@sched/contracts';
import type { SchedulerCommand } from './commands.js';

/**
 * The `Command` envelope as decoded from Avro, mapped onto the plain commands the rules and the
 * engine speak. The scheduler decodes every record through this, and the producer client checks
 * what it is about to send through this same mapping, so both judge the same value.
 */
export function toEngine(cmd: Command): SchedulerCommand {
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
