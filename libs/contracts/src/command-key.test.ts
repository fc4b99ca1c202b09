import { describe, expect, it } from 'vitest';
import { commandKey } from './command-key';
import { FULL_COMMANDS, MINIMAL_COMMANDS } from './contract-samples';

describe('commandKey', () => {
  it('is the job id for job commands and attempt results, the schedule id for schedule commands', () => {
    expect(FULL_COMMANDS.map((c) => [c.body.kind, commandKey(c)])).toEqual([
      ['CreateJob', 'job-1'],
      ['CancelJob', 'job-1'],
      ['RescheduleJob', 'job-1'],
      ['UpsertSchedule', 'sched-1'],
      ['PauseSchedule', 'sched-1'],
      ['ResumeSchedule', 'sched-1'],
      ['DeleteSchedule', 'sched-1'],
      ['AttemptResult', 'job-1'],
    ]);
    expect(MINIMAL_COMMANDS.map(commandKey)).toEqual([
      'job-2',
      'job-2',
      'job-2',
      'sched-2',
      'sched-2',
      'sched-2',
      'sched-2',
      'job-2',
    ]);
  });
});
