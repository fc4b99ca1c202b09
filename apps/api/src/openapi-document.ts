/**
 * The API's OpenAPI document, built from the routes without any service behind them (the routes
 * are only declared, never called). `npm run openapi` writes it to docs/openapi.json; a unit test
 * fails when the checked-in copy is stale.
 */
import { writeFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { fileURLToPath } from 'node:url';
import { buildApp, type ApiDeps } from './app.js';

/** The API with no services behind it: its routes are declared, not meant to be called. */
export function bareApp(): FastifyInstance {
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('the OpenAPI document is built without services');
      },
    },
  );
  return buildApp({
    producer: unused,
    contracts: unused,
    pool: unused,
    commandsTopic: 'sched.commands',
    callers: new Map(),
    payloadValidator: unused,
  } as unknown as ApiDeps);
}

export async function openApiDocument(): Promise<Record<string, unknown>> {
  const app = bareApp();
  await app.ready();
  const doc = app.swagger() as unknown as Record<string, unknown>;
  await app.close();
  return doc;
}

export const OPENAPI_PATH = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));

export const serialize = (doc: unknown): string => `${JSON.stringify(doc, null, 2)}\n`;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(OPENAPI_PATH, serialize(await openApiDocument()));
  console.log(`wrote ${OPENAPI_PATH}`);
}
