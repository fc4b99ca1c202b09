export * from './replay.js';
