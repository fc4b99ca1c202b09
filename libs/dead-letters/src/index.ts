export * from './replay.js';
export { registryPayloadValidator } from './registry-payload-validator.js';
