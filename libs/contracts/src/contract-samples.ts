/**
 * Sample values of every contract type, typed with the generated types: the compiler checks that
 * each sample has exactly the fields the types declare, and the tests check avsc accepts them, so
 * together they prove the generated types and the schemas agree. Also used by the integration test.
 *
 * `FULL_*` samples set every field, nullable ones included; `MINIMAL_*` samples are producer-side
 * Inputs that leave every defaulted field out.
 */
import type {
  AttemptResult,
  CancelJob,
  Command,
  CommandBodyByKind,
  CommandBodyInput,
  CommandBodyKind,
  CommandInput,
  CommandRejected,
  CommandRejectedInput,
  CreateJob,
  DeleteSchedule,
  Dispatch,
  DispatchInput,
  JobEvent,
  JobEventInput,
  PauseSchedule,
  RescheduleJob,
  ResumeSchedule,
  UpsertSchedule,
} from './generated-types';

const T0 = Date.UTC(2026, 10, 29, 9, 0, 0);

const createJob: CreateJob = {
  jobId: 'job-1',
  queue: 'emails',
  dueAtMs: T0 + 60_000,
  payload: Buffer.from('{"to":"a@example.com"}'),
  priority: 5,
  businessKey: 'invoice-42',
  maxAttempts: 7,
  retryPolicy: {
    baseMs: 1_000,
    capMs: 60_000,
    overrides: [
      { failureClass: 'THROTTLED', baseMs: 5_000, capMs: 300_000, maxAttempts: 20 },
      { failureClass: 'UNKNOWN', baseMs: null, capMs: null, maxAttempts: 3 },
    ],
  },
  jitterWindowMs: 250,
  expiresAtMs: T0 + 3_600_000,
  executionTimeoutMs: 30_000,
  headers: { traceparent: '00-abc-def-01', source: 'api' },
};

const upsertSchedule: UpsertSchedule = {
  scheduleId: 'sched-1',
  queue: 'reports',
  jobTemplate: {
    payload: Buffer.from([1, 2, 3]),
    priority: 1,
    headers: { kind: 'daily' },
    maxAttempts: 2,
    executionTimeoutMs: 120_000,
    retryPolicy: { baseMs: 500, capMs: 5_000, overrides: [] },
  },
  cron: '0 9 * * *',
  intervalMs: null,
  timeZone: 'America/New_York',
  startAtMs: T0,
  endAtMs: T0 + 86_400_000 * 365,
  maxRuns: 1000,
  misfirePolicy: 'FIRE_ALL',
  misfireFireAllCap: 10,
  misfireDeadlineMs: 3_600_000,
  overlapPolicy: 'BUFFER_ONE',
  dstSkippedPolicy: 'SKIP',
  dstRepeatedPolicy: 'BOTH',
  jitterWindowMs: 1_000,
  expectedVersion: 3,
};

const attemptResult: AttemptResult = {
  jobId: 'job-1',
  version: 2,
  attempt: 3,
  attemptId: 'att-9',
  leaseOwner: 'worker-a/17',
  leaseGeneration: 2 ** 40,
  outcome: 'FAILED',
  failureClass: 'THROTTLED',
  error: '429 Too Many Requests',
  retryAfterMs: 15_000,
  startedAtMs: T0 + 61_000,
  finishedAtMs: T0 + 62_500,
  workerId: 'worker-a',
};

const cancelJob: CancelJob = { jobId: 'job-1', reason: 'customer asked' };
const rescheduleJob: RescheduleJob = { jobId: 'job-1', dueAtMs: T0 + 120_000, expectedVersion: 1 };
const pauseSchedule: PauseSchedule = { scheduleId: 'sched-1', reason: 'maintenance' };
const resumeSchedule: ResumeSchedule = { scheduleId: 'sched-1', reason: null };
const deleteSchedule: DeleteSchedule = { scheduleId: 'sched-1', reason: 'retired' };

/** One fully populated body per command kind; the mapped type makes a missing kind a compile error. */
export const FULL_BODIES: { readonly [K in CommandBodyKind]: CommandBodyByKind[K] } = {
  CreateJob: createJob,
  CancelJob: cancelJob,
  RescheduleJob: rescheduleJob,
  UpsertSchedule: upsertSchedule,
  PauseSchedule: pauseSchedule,
  ResumeSchedule: resumeSchedule,
  DeleteSchedule: deleteSchedule,
  AttemptResult: attemptResult,
};

/** One command per kind, every field set. */
export const FULL_COMMANDS: readonly Command[] = (Object.keys(FULL_BODIES) as CommandBodyKind[]).map(
  (kind, i): Command => ({
    commandId: `cmd-${i}`,
    tenantId: 'tenant-a',
    issuedAtMs: T0 + i,
    body: { kind, value: FULL_BODIES[kind] } as Command['body'],
    callerId: 'alice@tenant-a',
  }),
);

/** One Input body per command kind with every defaulted field left out. */
export const MINIMAL_BODIES: readonly CommandBodyInput[] = [
  { kind: 'CreateJob', value: { jobId: 'job-2', queue: 'emails', dueAtMs: T0, payload: Buffer.alloc(0) } },
  { kind: 'CancelJob', value: { jobId: 'job-2' } },
  { kind: 'RescheduleJob', value: { jobId: 'job-2', dueAtMs: T0 + 1 } },
  {
    kind: 'UpsertSchedule',
    value: {
      scheduleId: 'sched-2',
      queue: 'reports',
      jobTemplate: { payload: Buffer.from('x') },
      timeZone: 'UTC',
      intervalMs: 60_000,
    },
  },
  { kind: 'PauseSchedule', value: { scheduleId: 'sched-2' } },
  { kind: 'ResumeSchedule', value: { scheduleId: 'sched-2' } },
  { kind: 'DeleteSchedule', value: { scheduleId: 'sched-2' } },
  {
    kind: 'AttemptResult',
    value: {
      jobId: 'job-2',
      version: 1,
      attempt: 1,
      attemptId: 'att-1',
      leaseOwner: 'w',
      leaseGeneration: 1,
      outcome: 'SUCCEEDED',
      startedAtMs: T0,
      finishedAtMs: T0 + 5,
      workerId: 'w',
    },
  },
];

export const MINIMAL_COMMANDS: readonly CommandInput[] = MINIMAL_BODIES.map((body, i) => ({
  commandId: `min-${i}`,
  tenantId: 'tenant-b',
  issuedAtMs: T0,
  body,
}));

export const FULL_DISPATCH: Dispatch = {
  eventId: 'evt-1',
  jobId: 'job-1',
  tenantId: 'tenant-a',
  queue: 'emails',
  version: 2,
  attempt: 1,
  epoch: 12,
  partition: 3,
  dueAtMs: T0 + 60_000,
  claimedAtMs: T0 + 60_004,
  payload: Buffer.from('{"to":"a@example.com"}'),
  priority: 5,
  businessKey: 'invoice-42',
  idempotencyKey: 'invoice-42',
  executionTimeoutMs: 30_000,
  scheduleId: 'sched-1',
  occurrenceAtMs: T0 + 60_000,
  headers: { traceparent: '00-abc-def-01' },
};

export const MINIMAL_DISPATCH: DispatchInput = {
  eventId: 'evt-2',
  jobId: 'job-2',
  tenantId: 'tenant-b',
  queue: 'emails',
  version: 1,
  attempt: 1,
  epoch: 1,
  partition: 0,
  dueAtMs: T0,
  claimedAtMs: T0,
  payload: Buffer.alloc(0),
  priority: 0,
  idempotencyKey: 'job-2',
};

export const FULL_EVENT: JobEvent = {
  eventId: 'evt-3',
  jobId: 'job-1',
  tenantId: 'tenant-a',
  type: 'RETRY_SCHEDULED',
  version: 2,
  attempt: 3,
  atMs: T0 + 62_600,
  detail: 'THROTTLED: retry in 15 s',
  callerId: 'ops@tenant-a',
};

export const MINIMAL_EVENT: JobEventInput = {
  eventId: 'evt-4',
  jobId: 'job-2',
  tenantId: 'tenant-b',
  type: 'CREATED',
  version: 1,
  attempt: 0,
  atMs: T0,
};

export const FULL_REJECTED: CommandRejected = {
  reasonCode: 'UNKNOWN_QUEUE',
  message: 'queue "nope" is not configured',
  commandId: 'cmd-0',
  tenantId: 'tenant-a',
  sourceTopic: 'sched.commands',
  sourcePartition: 7,
  sourceOffset: '9007199254740993',
  originalKey: Buffer.from('job-1'),
  originalValue: Buffer.from([0, 0, 0, 0, 1, 2]),
  originalKeyBytes: 5,
  originalValueBytes: 1_200_000,
  rejectedAtMs: T0 + 5,
  schedulerId: 'scheduler-1',
};

export const MINIMAL_REJECTED: CommandRejectedInput = {
  reasonCode: 'UNDECODABLE',
  message: 'magic byte is 123',
  sourceTopic: 'sched.commands',
  sourcePartition: 0,
  sourceOffset: '0',
  rejectedAtMs: T0,
  schedulerId: 'scheduler-1',
};
