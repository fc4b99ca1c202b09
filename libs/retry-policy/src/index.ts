export * from './failures.js';
export * from './policy.js';
