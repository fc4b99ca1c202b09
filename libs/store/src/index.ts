export { migrate, dropSchema, assertSchemaName, OUTBOX_PUBLICATION } from './migrate.js';
export type { MigrateOptions, MigrateResult } from './migrate.js';
