import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Ajv } from 'ajv';
import { QUERYSTRINGS, SUCCESS_RESPONSES } from './response-schemas.js';

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
 * it is documented, with its success body (`SUCCESS_RESPONSES`) and the error body as its 4xx and
 * 5xx responses.
 *
 * The response schemas document; they do not shape what is sent (JSON.stringify, not a serializer
 * compiled from them, which would drop or coerce what they do not name). With `checkResponses`
 * (the integration tests) every JSON response is validated against its route's schema first, and
 * one that does not match is a 500 `SCHED_E_RESPONSE_SCHEMA` naming the difference.
 */
export function registerOpenApi(app: FastifyInstance, options: { checkResponses?: boolean } = {}): void {
  app.addSchema(API_ERROR_SCHEMA);
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs') || route.url === '/openapi.json') return;
    const schema = (route.schema ??= {});
    const response = ((schema as { response?: Record<string, unknown> }).response ??= {});
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      for (const [code, body] of Object.entries(SUCCESS_RESPONSES[`${method} ${route.url}`] ?? {}))
        response[code] ??= body;
      const q = QUERYSTRINGS[`${method} ${route.url}`];
      if (q !== undefined) (schema as { querystring?: unknown }).querystring ??= q;
    }
    response['4xx'] ??= { $ref: 'ApiError#' };
    response['5xx'] ??= { $ref: 'ApiError#' };
  });
  const ajv = options.checkResponses
    ? new Ajv({ strict: false, allErrors: true }).addSchema(API_ERROR_SCHEMA)
    : null;
  app.setSerializerCompiler(({ schema, method, url, httpStatus }) => {
    if (!ajv) return (data) => JSON.stringify(data);
    const validate = ajv.compile(schema as object);
    return (data) => {
      const text = JSON.stringify(data);
      if (!validate(JSON.parse(text)))
        throw Object.assign(
          new Error(
            `the ${httpStatus} response of ${method} ${url} does not match its documented schema: ${ajv.errorsText(validate.errors)}`,
          ),
          { code: 'SCHED_E_RESPONSE_SCHEMA' },
        );
      return text;
    };
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
