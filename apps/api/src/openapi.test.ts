import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { OPENAPI_PATH, bareApp, openApiDocument, serialize } from './openapi-document.js';
import { registerOpenApi } from './openapi.js';

type Operation = { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> };

describe('the OpenAPI document', () => {
  it('is checked in up to date (npm run openapi writes it)', async () => {
    expect(readFileSync(OPENAPI_PATH, 'utf8')).toBe(serialize(await openApiDocument()));
  });

  it('is valid OpenAPI 3.1, and every operation documents its error body', async () => {
    const doc = await openApiDocument();
    expect(doc.openapi).toBe('3.1.0');
    await SwaggerParser.validate(structuredClone(doc) as never);
    const operations = Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(
      ([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })),
    );
    expect(operations.length).toBeGreaterThan(30);
    for (const { op } of operations) {
      expect(Object.keys(op.responses ?? {})).toEqual(expect.arrayContaining(['4XX', '5XX']));
    }
    // Every operation documents its success body too, and every body-taking one its request.
    const withoutSuccessSchema = operations.filter(
      ({ op }) => !Object.entries(op.responses ?? {}).some(([code, r]) => /^2/.test(code) && r.content),
    );
    expect(withoutSuccessSchema.map(({ method, path }) => `${method} ${path}`)).toEqual([]);
    const writes = operations.filter(({ method }) => method === 'post' || method === 'put');
    const withBody = writes.filter(({ op }) => (op as { requestBody?: unknown }).requestBody !== undefined);
    console.log(
      `openapi: ${operations.length} operations, all with a success schema; ${withBody.length} of ${writes.length} writes take a body`,
    );
  });

  it('is served at /openapi.json, with the Swagger UI at /docs, without a key', async () => {
    const app = bareApp();
    try {
      const doc = await app.inject({ method: 'GET', url: '/openapi.json' });
      expect(doc.statusCode).toBe(200);
      expect(doc.json()).toEqual(await openApiDocument());
      const ui = await app.inject({ method: 'GET', url: '/docs/' });
      expect(ui.statusCode).toBe(200);
      expect(ui.headers['content-type']).toContain('text/html');
      expect(ui.body).toContain('swagger');
    } finally {
      await app.close();
    }
  });

  it('checks responses against the document when asked, and never reshapes them', async () => {
    const answer = { body: {} as unknown };
    const make = async (checkResponses: boolean) => {
      const app = Fastify();
      registerOpenApi(app, { checkResponses });
      // As the API's own handler answers: the error body the document gives every 5xx.
      app.setErrorHandler((err: { code?: string; message: string }, _req, reply) =>
        reply.status(500).send({ error: { code: err.code ?? 'X', message: err.message, retriable: false } }),
      );
      await app.register(async (api) => {
        api.get('/healthz', async () => answer.body);
      });
      return app;
    };
    const checked = await make(true);
    const plain = await make(false);
    try {
      answer.body = { ok: true, extra: [1] };
      expect((await checked.inject({ method: 'GET', url: '/healthz' })).json()).toEqual(answer.body);
      expect((await plain.inject({ method: 'GET', url: '/healthz' })).json()).toEqual(answer.body);
      answer.body = { ok: 'yes' };
      const bad = await checked.inject({ method: 'GET', url: '/healthz' });
      expect(bad.statusCode).toBe(500);
      expect(bad.json().error.code).toBe('SCHED_E_RESPONSE_SCHEMA');
      expect(bad.json().error.message).toContain('GET /healthz does not match its documented schema');
      // Without the check it is sent as the handler gave it (no coercion to the schema's types).
      expect((await plain.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ ok: 'yes' });
    } finally {
      await checked.close();
      await plain.close();
    }
  });
});
