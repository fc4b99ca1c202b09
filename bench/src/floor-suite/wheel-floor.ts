import { jobId } from '../wheel-suite/job-ids';

/*
 * The least work any due-time index that keeps job ids in typed memory (no per-timer JS object, no
 * string-keyed Map: the wheel issue's constraints) must do per insert and per cancel at n pending,
 * in JS on this machine. None of it is the wheel: it bounds what any such design can reach here.
 *
 * - hashCopy: read the id's characters, hash them, copy them to a sequential slot.
 * - insert: hashCopy, then one probe of a 1-byte-fingerprint table (16 MB for 10M ids: the smallest
 *   table that answers "already pending?" with one access, and small enough for the L3 cache) and
 *   the two writes that file the id (fingerprint, slot number). No due time, no bucket, no record.
 * - cancel: hash the id, probe its fingerprint, read its slot number, read its stored bytes to
 *   confirm (a fingerprint alone can match another id). No unlink, no bookkeeping.
 */

const CHUNK = 65_536;

export interface WheelFloor {
  readonly n: number;
  readonly hashCopyNs: number;
  readonly insertNs: number;
  readonly cancelNs: number;
  /** 1e9 / insertNs and 1e9 / cancelNs: the most a design over these steps could do per second. */
  readonly insertCeilingPerSec: number;
  readonly cancelCeilingPerSec: number;
}

function tableBits(n: number): number {
  let bits = 10;
  while (2 ** bits * 0.7 < n) bits++;
  return bits;
}

export function measureWheelFloor(n: number): WheelFloor {
  const bits = tableBits(n);
  const cells = 2 ** bits;
  const mask = cells - 1;
  const area = new Int32Array(n * 12); // 48 bytes a slot, as the wheel's id area
  const tags = new Uint8Array(cells);
  const slots = new Int32Array(cells);
  // Touched before timing: first-touch page faults are not part of the floor.
  area.fill(0);
  tags.fill(0);
  slots.fill(0);
  const ids: string[] = new Array<string>(CHUNK).fill('');
  let sink = 0;

  const hashCopy = (id: string, w: number): number => {
    let h = 0;
    const len = id.length;
    for (let i = 0; i + 4 <= len; i += 4) {
      let k =
        id.charCodeAt(i) |
        (id.charCodeAt(i + 1) << 8) |
        (id.charCodeAt(i + 2) << 16) |
        (id.charCodeAt(i + 3) << 24);
      area[w + 2 + (i >> 2)] = k;
      k = Math.imul(k, 0xcc9e2d51);
      k = (k << 15) | (k >>> 17);
      h ^= Math.imul(k, 0x1b873593);
      h = (h << 13) | (h >>> 19);
      h = (Math.imul(h, 5) + 0xe6546b64) | 0;
    }
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    return h ^ (h >>> 13);
  };

  const timed = (phase: (base: number, m: number) => void): number => {
    let ms = 0;
    for (let base = 0; base < n; base += CHUNK) {
      const m = Math.min(CHUNK, n - base);
      for (let i = 0; i < m; i++) ids[i] = jobId(base + i);
      const t = performance.now();
      phase(base, m);
      ms += performance.now() - t;
    }
    return Math.round((ms * 1e6) / n);
  };

  const hashCopyNs = timed((base, m) => {
    for (let i = 0; i < m; i++) sink ^= hashCopy(ids[i]!, (base + i) * 12);
  });
  const insertNs = timed((base, m) => {
    for (let i = 0; i < m; i++) {
      const s = base + i;
      const h = hashCopy(ids[i]!, s * 12);
      const tag = (h & 0x7f) | 0x80;
      let c = (h >>> 7) & mask;
      while (tags[c] !== 0) c = (c + 1) & mask;
      tags[c] = tag;
      slots[c] = s;
      area[s * 12] = h;
    }
  });
  const cancelNs = timed((base, m) => {
    for (let i = 0; i < m; i++) {
      const h = hashCopy(ids[i]!, 0);
      const tag = (h & 0x7f) | 0x80;
      let c = (h >>> 7) & mask;
      while (tags[c] !== 0 && tags[c] !== tag) c = (c + 1) & mask;
      sink ^= area[slots[c]! * 12 + 2]!;
    }
  });
  if (sink === 0.5) console.log(sink); // keeps the loads observable
  return {
    n,
    hashCopyNs,
    insertNs,
    cancelNs,
    insertCeilingPerSec: Math.round(1e9 / insertNs),
    cancelCeilingPerSec: Math.round(1e9 / cancelNs),
  };
}
