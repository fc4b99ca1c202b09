/**
 * The observation point every system shares: a worker process calls `reportStart` as the first
 * thing its handler does, with `Date.now()` taken there. Reports go to the bench process over the
 * IPC channel (spawned with stdio `ipc`), batched every `flushEveryMs` so reporting costs the worker
 * one small message per batch, not one per job.
 *
 * Message shape: `{ e2e: 'starts', d: number[] }` with `d` a flat list of
 * `(tag, index, startMs, claimMs)` quadruples; `claimMs` is NaN→-1 when the system has no claim time.
 */

export const STARTS_MESSAGE = 'starts';
export const QUAD = 4;

export interface StartsMessage {
  e2e: typeof STARTS_MESSAGE;
  d: number[];
}

export function isStartsMessage(m: unknown): m is StartsMessage {
  return typeof m === 'object' && m !== null && (m as StartsMessage).e2e === STARTS_MESSAGE;
}

let pending: number[] = [];
let timer: NodeJS.Timeout | null = null;
const flushEveryMs = 20;

function flush(): void {
  timer = null;
  if (pending.length === 0 || !process.send) return;
  const d = pending;
  pending = [];
  process.send({ e2e: STARTS_MESSAGE, d } satisfies StartsMessage);
}

/** Records one handler start. `claimMs` is the scheduler's claim time when the system has one. */
export function reportStart(tag: number, index: number, startMs: number, claimMs = -1): void {
  pending.push(tag, index, startMs, claimMs);
  if (!timer) timer = setTimeout(flush, flushEveryMs);
}

/** Payloads carry `(tag, index)` so any system's worker can tell the bench which job started. */
export function encodeJobRef(tag: number, index: number): string {
  return `{"r":${tag},"i":${index}}`;
}

export function decodeJobRef(text: string): { r: number; i: number } {
  return JSON.parse(text) as { r: number; i: number };
}
