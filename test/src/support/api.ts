import type { FastifyInstance } from 'fastify';
import { buildApp, type ApiCaller } from '@sched/api-app';
import { registryPayloadValidator } from '@sched/dead-letters';
import type { MessageProducer } from '@sched/kafka';
import type { Registry } from '@sched/metrics';
import { contracts } from './kafka.js';
import { endpoints } from './isolation.js';
import type { Scenario } from './scenario.js';

/** The HTTP API over a scenario's schema and command topic (tests call it with `app.inject`). */
export async function scenarioApi(
  s: Scenario,
  producer: MessageProducer,
  callers: Record<string, ApiCaller>,
  metrics?: Registry,
): Promise<FastifyInstance> {
  return buildApp({
    producer,
    contracts: await contracts(),
    pool: s.db.pool,
    commandsTopic: s.commandsTopic,
    callers: new Map(Object.entries(callers)),
    payloadValidator: registryPayloadValidator(s.db.pool, endpoints().registryUrl),
    metrics,
    // Every response the tests get is checked against the OpenAPI document's schema for it.
    checkResponses: true,
  });
}
