/*
 * Job ids as bytes: the MurmurHash3 x86_32 hash the id index keys on, and the one-pass fast path
 * that hashes an ASCII id while copying it into the index's words. Pure functions, no state.
 */

/**
 * The fast path of `IdIndex.encode`, for an id of 1 to 40 characters: hashes it (MurmurHash3 x86_32)
 * and copies it into `words` from word w + 2 in one pass, 4 chars per word, then writes the hash at w
 * and the length at w + 1. Returns false (the words then hold garbage) when the id is not all ASCII.
 */
export function encodeAscii(words: Int32Array, w: number, id: string, n: number): boolean {
  let h = 0;
  let seen = 0;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const c0 = id.charCodeAt(i);
    const c1 = id.charCodeAt(i + 1);
    const c2 = id.charCodeAt(i + 2);
    const c3 = id.charCodeAt(i + 3);
    seen |= c0 | c1 | c2 | c3;
    const k = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24);
    words[w + 2 + (i >> 2)] = k;
    h = mixBlock(h, k);
  }
  let k = 0;
  for (let shift = 0; i < n; i++, shift += 8) {
    const c = id.charCodeAt(i);
    seen |= c;
    k |= c << shift;
  }
  if (seen > 0x7f) return false;
  if ((n & 3) !== 0) words[w + 2 + (n >> 2)] = k;
  words[w] = finish(h, k, n);
  words[w + 1] = n;
  return true;
}

/** One 4-byte block of MurmurHash3 x86_32. */
export function mixBlock(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  h ^= Math.imul(k, 0x1b873593);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** MurmurHash3 x86_32's tail and finalisation. */
export function finish(h: number, tail: number, len: number): number {
  if (tail !== 0) {
    tail = Math.imul(tail, 0xcc9e2d51);
    tail = (tail << 15) | (tail >>> 17);
    h ^= Math.imul(tail, 0x1b873593);
  }
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** MurmurHash3 x86_32 (seed 0) of bytes; equals the fast path of `encode` for ASCII. */
export function hashBytes(b: Uint8Array, start: number, len: number): number {
  let h = 0;
  let i = start;
  const end = start + len;
  for (; i + 4 <= end; i += 4)
    h = mixBlock(h, b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24));
  let k = 0;
  for (let shift = 0; i < end; i++, shift += 8) k |= b[i]! << shift;
  return finish(h, k, len);
}

/** Whether `s` has no lone surrogate (so that it has a UTF-8 form). */
export function isWellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c > 0xdbff) return false;
    const d = s.charCodeAt(i + 1);
    if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
    i++;
  }
  return true;
}
