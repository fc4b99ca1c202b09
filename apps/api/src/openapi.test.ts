import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { OPENAPI_PATH, bareApp, openApiDocument, serialize } from './openapi-document.js';

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
    const withoutSuccessSchema = operations.filter(
      ({ op }) => !Object.entries(op.responses ?? {}).some(([code, r]) => /^2/.test(code) && r.content),
    );
    console.log(
      `openapi: ${operations.length} operations, ${operations.length - withoutSuccessSchema.length} with a success schema`,
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
});
