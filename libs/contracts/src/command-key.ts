import type { Command, CommandInput } from './generated-types';

/**
 * The Kafka key a command must be produced with on sched.commands: the job id for job commands and
 * attempt results, the schedule id for schedule commands. All commands about one entity then share a
 * partition, which is what orders them. Encode as plain UTF-8 (`Buffer.from(key)`), not Avro.
 */
export function commandKey(command: Command | CommandInput): string {
  const body = command.body;
  switch (body.kind) {
    case 'CreateJob':
    case 'CancelJob':
    case 'RescheduleJob':
    case 'AttemptResult':
      return body.value.jobId;
    case 'UpsertSchedule':
    case 'PauseSchedule':
    case 'ResumeSchedule':
    case 'DeleteSchedule':
      return body.value.scheduleId;
    default: {
      const unknown: never = body;
      throw new Error(
        `commandKey: unknown command kind ${JSON.stringify((unknown as { kind?: unknown }).kind)}`,
      );
    }
  }
}
