import { Buffer } from 'node:buffer';

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32): both implementations see the same workload. */
export function seededRandom(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

const HEX = '0123456789abcdef';
const scratch = Buffer.alloc(36);

/**
 * The job id of key k: a random-looking lowercase UUID (version 4 layout), the same string for the
 * same k. Built as a flat string from bytes, so that neither implementation pays for flattening a
 * concatenated string inside a timed loop.
 */
export function jobId(k: number): string {
  const words = [
    mix32(k),
    mix32(k ^ 0x9e3779b9),
    mix32(k + 0x7f4a7c15),
    mix32(Math.floor(k / 2 ** 32) ^ 0x2545f491),
  ];
  let at = 0;
  for (let i = 0; i < 32; i++) {
    if (i === 8 || i === 12 || i === 16 || i === 20) scratch[at++] = 0x2d; // '-'
    let nibble = (words[i >> 3]! >>> ((i & 7) * 4)) & 15;
    if (i === 12) nibble = 4; // version
    if (i === 16) nibble = 8 | (nibble & 3); // variant
    scratch[at++] = HEX.charCodeAt(nibble);
  }
  return scratch.toString('latin1', 0, 36);
}
