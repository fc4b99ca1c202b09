/**
 * The success bodies of the API's routes, as JSON Schema: they document the responses in the
 * OpenAPI document. They do not shape the responses (the API serializes with JSON.stringify, see
 * `app.ts`); with `checkResponses` (the integration tests) every response is validated against its
 * schema, so the document cannot drift from what the API sends.
 */

const str = { type: 'string' } as const;
const nullableStr = { type: ['string', 'null'] } as const;
const int = { type: 'integer' } as const;
const nullableInt = { type: ['integer', 'null'] } as const;
/** A timestamp as the API sends it: ISO-8601 text. */
const instant = { type: 'string', description: 'ISO-8601 instant' } as const;
const nullableInstant = { type: ['string', 'null'], description: 'ISO-8601 instant, or null' } as const;

function object(properties: Record<string, unknown>, required: string[] = Object.keys(properties)) {
  return { type: 'object', required, properties } as const;
}

function list(key: string, item: object, extra: Record<string, unknown> = {}) {
  return object({ ...extra, [key]: { type: 'array', items: item } });
}

/** A write's 202: the command is on Kafka; `statusUrl` answers what the scheduler decided. */
export const COMMAND_ACCEPTED = {
  type: 'object',
  required: ['commandId', 'statusUrl'],
  properties: {
    jobId: str,
    scheduleId: str,
    commandId: { type: 'string', description: 'the command id; GET statusUrl for its fate' },
    statusUrl: { type: 'string', description: '/v1/commands/{commandId}' },
  },
} as const;

export const JOBS_ACCEPTED = list('jobs', COMMAND_ACCEPTED);

export const SCHEDULE_ACCEPTED = {
  ...COMMAND_ACCEPTED,
  properties: {
    ...COMMAND_ACCEPTED.properties,
    next: {
      type: 'array',
      description: 'the next fire times, as preview gives them',
      items: { type: 'object' },
    },
  },
} as const;

export const JOB = object(
  {
    jobId: str,
    tenantId: str,
    queue: str,
    state: {
      type: 'string',
      enum: ['SCHEDULED', 'DISPATCHED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'DEAD', 'CANCELLED', 'EXPIRED'],
    },
    version: int,
    attempt: int,
    dueAt: instant,
    priority: int,
    businessKey: nullableStr,
    scheduleId: nullableStr,
    dispatchedAt: nullableInstant,
    finishedAt: nullableInstant,
    createdAt: instant,
    attempts: {
      type: 'array',
      items: object(
        {
          attemptId: str,
          attempt: int,
          workerId: nullableStr,
          startedAt: nullableInstant,
          endedAt: nullableInstant,
          outcome: nullableStr,
          failureClass: nullableStr,
          error: nullableStr,
        },
        ['attemptId', 'attempt'],
      ),
    },
  },
  ['jobId', 'tenantId', 'queue', 'state', 'version', 'dueAt', 'attempts'],
);

/** A job in a list: the job's row without its attempts. */
export const JOB_SUMMARY = {
  ...JOB,
  required: JOB.required.filter((k) => k !== 'attempts'),
  properties: Object.fromEntries(Object.entries(JOB.properties).filter(([k]) => k !== 'attempts')),
} as const;

const NEXT_CURSOR = {
  type: ['string', 'null'],
  description: 'pass as cursor for the next page; null at the end',
};

export const JOB_PAGE = object({ jobs: { type: 'array', items: JOB_SUMMARY }, nextCursor: NEXT_CURSOR });

export const BULK_CANCEL = object({
  matched: { type: 'integer', description: 'cancellable jobs the filter matches' },
  sent: { type: 'integer', description: 'CancelJob commands sent (0 on a dry run)' },
  more: { type: 'boolean', description: 'more match than one call takes (10,000): call again' },
  jobIds: { type: 'array', items: str, description: 'the first 20 of them, by due time' },
});

export const SCHEDULE = object(
  {
    scheduleId: str,
    tenantId: str,
    queue: str,
    state: { type: 'string', enum: ['ACTIVE', 'PAUSED', 'DELETED', 'COMPLETED'] },
    cron: nullableStr,
    intervalMs: { type: ['number', 'null'] },
    timeZone: str,
    startAt: nullableInstant,
    endAt: nullableInstant,
    maxRuns: nullableInt,
    runs: int,
    nextFireAt: nullableInstant,
    misfirePolicy: str,
    overlapPolicy: str,
    dstSkippedPolicy: str,
    dstRepeatedPolicy: str,
    jitterWindowMs: { type: 'number' },
    priority: int,
    version: int,
    createdAt: instant,
    updatedAt: instant,
  },
  ['scheduleId', 'tenantId', 'queue', 'state', 'timeZone', 'runs', 'version'],
);

export const SCHEDULE_PAGE = object({
  schedules: { type: 'array', items: SCHEDULE },
  nextCursor: NEXT_CURSOR,
});

export const OCCURRENCES = object({
  scheduleId: str,
  fates: { type: 'object', additionalProperties: int, description: 'count per fate' },
  occurrences: {
    type: 'array',
    items: object(
      {
        scheduleId: str,
        nominalAtMs: { type: 'number' },
        occurrenceId: str,
        fate: str,
        jobId: nullableStr,
        localWall: nullableStr,
        detail: nullableStr,
      },
      ['scheduleId', 'nominalAtMs', 'fate'],
    ),
  },
});

export const PREVIEW = list('next', object({ utc: str, local: str, dst: str }, ['utc', 'local']));

export const DEAD_LETTERS = list(
  'deadLetters',
  object(
    {
      jobId: str,
      queue: str,
      deadAt: instant,
      failureClass: nullableStr,
      lastError: nullableStr,
      attempts: int,
      replayCount: int,
      quarantined: { type: 'boolean' },
    },
    ['jobId', 'queue', 'deadAt'],
  ),
);

export const DEAD_LETTER = {
  type: 'object',
  required: ['jobId', 'queue', 'history'],
  properties: {
    jobId: str,
    queue: str,
    history: { type: 'array', items: { type: 'object' }, description: 'every attempt, oldest first' },
  },
} as const;

export const REPLAY_RESULT = object({
  auditId: nullableStr,
  replayed: { type: 'array', items: str },
  refused: {
    type: 'array',
    items: object({
      jobId: str,
      code: { type: 'string', enum: ['NOT_DEAD_LETTERED', 'QUARANTINED', 'INCOMPATIBLE_PAYLOAD'] },
      reason: str,
    }),
  },
});

const QUEUE = object(
  {
    queue: str,
    createdAt: instant,
    maxDispatchPerSecond: { type: ['number', 'null'] },
    pausedAt: nullableInstant,
  },
  ['queue', 'maxDispatchPerSecond', 'pausedAt'],
);
export { QUEUE };

export const QUEUES = object(
  {
    tenantId: str,
    overdueAfterMs: int,
    queues: { type: 'array', items: { type: 'object' }, description: "the tenant's backlog per queue" },
    known: { type: 'array', items: QUEUE },
  },
  ['tenantId', 'queues', 'known'],
);

const TENANT_PROPS = {
  tenantId: str,
  createdAt: instant,
  maxPendingJobs: nullableInt,
  commandsPerSecond: { type: ['number', 'null'] },
  commandBurst: nullableInt,
  disabledAt: nullableInstant,
};
export const TENANT = object(TENANT_PROPS, ['tenantId', 'maxPendingJobs', 'commandsPerSecond', 'disabledAt']);
export const TENANT_WITH_PENDING = object({ ...TENANT_PROPS, pendingJobs: int }, [
  'tenantId',
  'maxPendingJobs',
  'pendingJobs',
]);
export const TENANTS = list('tenants', TENANT);

const API_KEY_PROPS = {
  keyId: str,
  callerId: str,
  tenantId: str,
  permissions: { type: 'array', items: str },
  createdAt: instant,
  revokedAt: nullableInstant,
};
export const API_KEY = object(API_KEY_PROPS, ['keyId', 'callerId', 'tenantId', 'permissions', 'revokedAt']);
export const API_KEY_ISSUED = object(
  { ...API_KEY_PROPS, key: { type: 'string', description: 'the key itself, shown this once' } },
  ['keyId', 'callerId', 'tenantId', 'permissions', 'key'],
);
export const API_KEYS = list('keys', API_KEY);

export const COMMAND_STATUS = object(
  {
    commandId: str,
    status: { type: 'string', enum: ['pending', 'applied', 'no-op', 'rejected'] },
    kind: nullableStr,
    entityId: nullableStr,
    detail: { type: ['string', 'null'], description: 'why a no-op, or the rejection reason and message' },
    decidedAt: nullableInstant,
    issuedAt: nullableInstant,
  },
  ['commandId', 'status'],
);

export const PARTITIONS = object({
  homeRegion: {
    type: ['object', 'null'],
    properties: { region: str, term: { type: ['integer', 'string'] }, since: instant },
  },
  partitions: {
    type: 'array',
    items: object({ partition: int, ownerId: str, epoch: int, since: instant, ownedForMs: int }),
  },
});

export const WORKERS = list(
  'workers',
  object({
    workerId: str,
    incarnation: { type: ['string', 'integer'] },
    alive: { type: 'boolean' },
    startedAt: instant,
    lastBeatAt: instant,
    aliveUntil: instant,
    running: int,
  }),
);

export const HEALTH = object({ ok: { type: 'boolean' } }, []);

export const METRICS_TEXT = { type: 'string', description: 'Prometheus text exposition format' } as const;

/** The success response of every route, by `METHOD url` as Fastify declares it. */
export const SUCCESS_RESPONSES: Readonly<Record<string, Readonly<Record<number, unknown>>>> = {
  'GET /healthz': { 200: HEALTH },
  'GET /metrics': { 200: METRICS_TEXT },
  'POST /v1/jobs': { 202: COMMAND_ACCEPTED },
  'POST /v1/jobs/batch': { 202: JOBS_ACCEPTED },
  'DELETE /v1/jobs/:jobId': { 202: COMMAND_ACCEPTED },
  'GET /v1/jobs': { 200: JOB_PAGE },
  'POST /v1/jobs/cancel': { 200: BULK_CANCEL },
  'GET /v1/jobs/:jobId': { 200: JOB },
  'GET /v1/schedules': { 200: SCHEDULE_PAGE },
  'GET /v1/schedules/:scheduleId': { 200: SCHEDULE },
  'POST /v1/jobs/:jobId/reschedule': { 202: COMMAND_ACCEPTED },
  'PUT /v1/schedules/:scheduleId': { 202: SCHEDULE_ACCEPTED },
  'DELETE /v1/schedules/:scheduleId': { 202: COMMAND_ACCEPTED },
  'POST /v1/schedules/:scheduleId/pause': { 202: COMMAND_ACCEPTED },
  'POST /v1/schedules/:scheduleId/resume': { 202: COMMAND_ACCEPTED },
  'GET /v1/schedules/:scheduleId/occurrences': { 200: OCCURRENCES },
  'GET /v1/schedules/preview': { 200: PREVIEW },
  'GET /v1/dlq': { 200: DEAD_LETTERS },
  'GET /v1/dlq/:jobId': { 200: DEAD_LETTER },
  'POST /v1/dlq/replay': { 200: REPLAY_RESULT },
  'GET /v1/queues': { 200: QUEUES },
  'GET /v1/queues/:queue': { 200: QUEUE },
  'PUT /v1/queues/:queue': { 200: QUEUE, 201: QUEUE },
  'POST /v1/queues/:queue/pause': { 200: QUEUE },
  'POST /v1/queues/:queue/resume': { 200: QUEUE },
  'GET /v1/partitions': { 200: PARTITIONS },
  'GET /v1/workers': { 200: WORKERS },
  'GET /v1/tenants': { 200: TENANTS },
  'GET /v1/tenants/:tenantId': { 200: TENANT_WITH_PENDING },
  'PUT /v1/tenants/:tenantId': { 200: TENANT, 201: TENANT },
  'POST /v1/tenants/:tenantId/disable': { 200: TENANT },
  'POST /v1/tenants/:tenantId/enable': { 200: TENANT },
  'POST /v1/tenants/:tenantId/keys': { 201: API_KEY_ISSUED },
  'GET /v1/tenants/:tenantId/keys': { 200: API_KEYS },
  'DELETE /v1/tenants/:tenantId/keys/:keyId': { 200: API_KEY },
  'GET /v1/commands/:commandId': { 200: COMMAND_STATUS },
};

function query(properties: Record<string, { description: string; enum?: readonly string[] }>) {
  return {
    type: 'object',
    properties: Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, { type: 'string', ...v }])),
  } as const;
}

/** The query parameters of the routes that take any, by `METHOD url` (documented and validated). */
export const QUERYSTRINGS: Readonly<Record<string, unknown>> = {
  'GET /v1/jobs': query({
    state: {
      description: 'only jobs in this state',
      enum: ['SCHEDULED', 'DISPATCHED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'DEAD', 'CANCELLED', 'EXPIRED'],
    },
    queue: { description: 'only this queue' },
    dueFrom: { description: 'due at or after this instant (ISO-8601 or ms since the epoch)' },
    dueTo: { description: 'due before this instant' },
    businessKey: { description: 'only jobs with this business key' },
    limit: { description: 'page size, 1..1000 (default 100)' },
    cursor: { description: "the previous page's nextCursor" },
  }),
  'GET /v1/schedules': query({
    state: {
      description: 'only schedules in this state',
      enum: ['ACTIVE', 'PAUSED', 'DELETED', 'COMPLETED'],
    },
    queue: { description: 'only this queue' },
    limit: { description: 'page size, 1..1000 (default 100)' },
    cursor: { description: "the previous page's nextCursor" },
  }),
  'GET /v1/dlq': query({
    queue: { description: 'only this queue' },
    limit: { description: 'at most this many, oldest first (default 100, at most 1000)' },
  }),
  'GET /v1/queues': query({
    overdueAfterMs: { description: 'count a job as overdue once due this long ago (default 2000)' },
  }),
  'GET /v1/schedules/:scheduleId/occurrences': query({
    limit: { description: 'at most this many, newest first (default 100, at most 1000)' },
  }),
  'GET /v1/schedules/preview': query({
    cron: { description: 'a cron rule (5 or 6 fields)' },
    intervalMs: { description: 'or a fixed interval, in ms' },
    timeZone: { description: 'IANA zone the rule is read in (default UTC)' },
    from: { description: 'preview from this instant (default now)' },
    n: { description: 'how many fire times (default 10, at most 1000)' },
    dstSkippedPolicy: { description: 'a local time the spring-forward gap skips', enum: ['SHIFT', 'SKIP'] },
    dstRepeatedPolicy: { description: 'a local time the fall-back repeats', enum: ['FIRST', 'LAST', 'BOTH'] },
  }),
  'GET /v1/commands/:commandId': query({
    wait: { description: 'hold the answer until decided, up to this long: 5s, 500ms or ms (at most 30s)' },
  }),
};
