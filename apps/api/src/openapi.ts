import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';

/** The error body of every route (`apps/api/src/errors.ts`), referenced by each route's 4xx/5xx. */
export const API_ERROR_SCHEMA = {
  $id: 'ApiError',
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'retriable'],
      additionalProperties: false,
      properties: {
        code: { type: 'string', pattern: '^SCHED_E_[A-Z_]+$', description: 'from the error catalogue' },
        message: { type: 'string' },
        retriable: { type: 'boolean', description: 'whether the same request may succeed later' },
      },
    },
  },
} as const;

/**
 * The OpenAPI 3.1 document, generated from the routes' JSON schemas (`GET /openapi.json`), and the
 * Swagger UI over it at `/docs`. Must be registered before the routes: every route declared after
 * it is documented, and given the error body as its 4xx and 5xx responses unless it names its own.
 */
export function registerOpenApi(app: FastifyInstance): void {
  app.addSchema(API_ERROR_SCHEMA);
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) return;
    const schema = (route.schema ??= {});
    const response = ((schema as { response?: Record<string, unknown> }).response ??= {});
    response['4xx'] ??= { $ref: 'ApiError#' };
    response['5xx'] ??= { $ref: 'ApiError#' };
  });
  void app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Kafka-native job scheduler: HTTP API',
        version: '1',
        description:
          'Writes become commands on the command topic (202 once Kafka acknowledged them; follow `statusUrl` for what the scheduler decided); reads come from Postgres. Every request carries `x-api-key`.',
      },
      components: {
        securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      },
      security: [{ apiKey: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  void app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
