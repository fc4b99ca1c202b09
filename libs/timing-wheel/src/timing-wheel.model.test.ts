import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TimingWheel, TimingWheelError, WheelErrorCode, type WheelHandle } from './index';

/*
 * Model-based test: random sequences of add / cancel (one or many) / reschedule / advance / load run against the
 * wheel and against a plain list of pending entries; after every step the two must agree. Checked:
 * same entries out, in due order (the batch is a prefix of the model's entries sorted by due time),
 * none early, none lost (a final drain empties both), nextDueMs a lower bound, error codes.
 *
 * WHEEL_MODEL_RUNS (default 10,000), WHEEL_MODEL_SEED and WHEEL_MODEL_PATH replay a failure: the
 * failure message prints the seed and path.
 */
const RUNS = Number(process.env.WHEEL_MODEL_RUNS ?? 10_000);
const SEED = process.env.WHEEL_MODEL_SEED === undefined ? undefined : Number(process.env.WHEEL_MODEL_SEED);
const PATH = process.env.WHEEL_MODEL_PATH;

/** A few ids of every kind: short, UUID-like, over 40 bytes (overflow arena), non-ASCII. */
const ID_POOL = Array.from({ length: 24 }, (_, k) => {
  switch (k % 4) {
    case 0:
      return `j${k}`;
    case 1:
      return `3f2a9c1e-8b7d-4e6f-a5c4-${String(k).padStart(12, '0')}`;
    case 2:
      return `tenant-${k}/schedule-with-a-long-name/run-${'x'.repeat(k)}`;
    default:
      return `ジョブ-${k}-${'é'.repeat(k % 7)}`;
  }
});

type Op =
  | { kind: 'add'; key: number; offset: number }
  | { kind: 'cancelById'; key: number }
  | { kind: 'cancelMany'; keys: number[] }
  | { kind: 'cancelHandle'; pick: number }
  | { kind: 'rescheduleById'; key: number; offset: number }
  | { kind: 'rescheduleHandle'; pick: number; offset: number }
  | { kind: 'advance'; dt: number; maxBatch: number; settle: boolean }
  | { kind: 'load'; entries: { key: number; offset: number }[] };

const key = fc.nat({ max: ID_POOL.length - 1 });
/** Due offsets from "now" at every scale the levels have, including the past and the far future. */
const offset = fc.oneof(
  fc.integer({ min: -40, max: 40 }),
  fc.integer({ min: 0, max: 600 }),
  fc.integer({ min: 0, max: 40_000 }),
  fc.integer({ min: -5_000_000, max: 5_000_000 }),
  fc.integer({ min: 0, max: 2 ** 40 }),
  fc.constant(Number.MAX_SAFE_INTEGER),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('add' as const), key, offset }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancelById' as const), key }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('cancelMany' as const), keys: fc.array(key, { maxLength: 8 }) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancelHandle' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('rescheduleById' as const), key, offset }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('rescheduleHandle' as const), pick: fc.nat(), offset }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      dt: fc.oneof(fc.integer({ min: -50, max: 50 }), fc.nat({ max: 3_000 }), fc.nat({ max: 10_000_000 })),
      maxBatch: fc.integer({ min: 1, max: 12 }),
      settle: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('load' as const),
      entries: fc.array(fc.record({ key, offset }), { maxLength: 8 }),
    }),
  },
);
const config: fc.Arbitrary<Config> = fc.record({
  startMs: fc.oneof(fc.nat({ max: 5_000 }), fc.constant(1_750_000_000_000)),
  wheelBits: fc.constantFrom(5, 6, 8, 10, 14),
  cascadeBudget: fc.constantFrom(1, 2, 7, 64, Infinity),
  initialCapacity: fc.constantFrom(0, 3, 64),
});

interface Config {
  startMs: number;
  wheelBits: number;
  cascadeBudget: number;
  initialCapacity: number;
}

interface ModelEntry {
  dueMs: number;
  handle: WheelHandle;
  /** The caller's tag: derived from the op's offset, so runs stay reproducible from the seed. */
  tag: number;
}

/** A tag for an op: any int32, 0 often (the default). */
const tagOf = (offset: number): number => (offset % 3 === 0 ? 0 : Math.imul(offset, 2_654_435_761));

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof TimingWheelError) return err.code;
    throw err;
  }
  return undefined;
}

function clampDue(nowMs: number, off: number): number {
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, nowMs + off));
}

function run(cfg: Config, ops: Op[]): void {
  const wheel = new TimingWheel(cfg);
  const model = new Map<string, ModelEntry>();
  const handles: WheelHandle[] = [];
  let nowMs = cfg.startMs;

  /** One advance call, checked against the model. */
  const advanceOnce = (maxBatch: number): number => {
    const batch = wheel.advance(nowMs, maxBatch);
    const dueOrder = [...model.values()].map((e) => e.dueMs).sort((a, b) => a - b);
    const dueNow = dueOrder.filter((d) => d <= nowMs).length;
    expect(batch.length).toBeLessThanOrEqual(maxBatch);
    if (cfg.cascadeBudget === Infinity) expect(batch.length).toBe(Math.min(maxBatch, dueNow));
    for (let i = 0; i < batch.length; i++) {
      const id = batch.ids[i]!;
      const dueMs = batch.dueMs[i]!;
      expect(dueMs).toBeLessThanOrEqual(nowMs); // never early
      expect(dueMs).toBe(dueOrder[i]); // earliest first: a prefix of the model's due order
      expect(model.get(id)?.dueMs).toBe(dueMs); // the entry itself
      expect(batch.tags[i]).toBe(model.get(id)?.tag); // with its tag
      model.delete(id);
    }
    return batch.length;
  };

  /** nextDueMs is undefined iff empty, and never after the next due time. */
  const checkNextDue = (): void => {
    const next = wheel.nextDueMs();
    expect(wheel.size).toBe(model.size);
    if (model.size === 0) {
      expect(next).toBeUndefined();
      return;
    }
    const first = Math.min(...[...model.values()].map((e) => e.dueMs));
    expect(next).toBeDefined();
    expect(next!).toBeLessThanOrEqual(first);
  };

  for (const o of ops) {
    switch (o.kind) {
      case 'add': {
        const id = ID_POOL[o.key]!;
        const dueMs = clampDue(nowMs, o.offset);
        if (model.has(id)) {
          expect(codeOf(() => wheel.add(id, dueMs, tagOf(o.offset)))).toBe(WheelErrorCode.DuplicateId);
        } else {
          const handle = wheel.add(id, dueMs, tagOf(o.offset));
          model.set(id, { dueMs, handle, tag: tagOf(o.offset) });
          handles.push(handle);
        }
        break;
      }
      case 'cancelById': {
        const id = ID_POOL[o.key]!;
        expect(wheel.cancelById(id)).toBe(model.delete(id));
        break;
      }
      case 'cancelMany': {
        // As cancelById on each in turn: a repeated id counts once.
        const ids = o.keys.map((k) => ID_POOL[k]!);
        expect(wheel.cancelManyById(ids)).toBe(ids.filter((id) => model.delete(id)).length);
        break;
      }
      case 'cancelHandle': {
        if (handles.length === 0) break;
        const handle = handles[o.pick % handles.length]!;
        const live = [...model].find(([, e]) => e.handle === handle);
        expect(wheel.cancel(handle)).toBe(live !== undefined);
        if (live) model.delete(live[0]);
        break;
      }
      case 'rescheduleById': {
        const id = ID_POOL[o.key]!;
        const dueMs = clampDue(nowMs, o.offset);
        const entry = model.get(id);
        // Every other reschedule by id also sets the tag; the rest keep theirs.
        const tag = o.offset % 2 === 0 ? tagOf(o.offset + 1) : undefined;
        expect(wheel.rescheduleById(id, dueMs, tag)).toBe(entry !== undefined);
        if (entry) {
          entry.dueMs = dueMs;
          if (tag !== undefined) entry.tag = tag;
        }
        break;
      }
      case 'rescheduleHandle': {
        if (handles.length === 0) break;
        const handle = handles[o.pick % handles.length]!;
        const dueMs = clampDue(nowMs, o.offset);
        const live = [...model.values()].find((e) => e.handle === handle);
        expect(wheel.reschedule(handle, dueMs)).toBe(live !== undefined);
        if (live) live.dueMs = dueMs;
        break;
      }
      case 'advance': {
        nowMs = Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, nowMs + o.dt));
        advanceOnce(o.maxBatch);
        if (o.settle) {
          // Calling again while nextDueMs() <= now must drain everything due, in a bounded number of calls.
          for (let calls = 0; ; calls++) {
            expect(calls).toBeLessThan(10_000);
            const next = wheel.nextDueMs();
            if (next === undefined || next > nowMs) break;
            advanceOnce(o.maxBatch);
          }
          expect([...model.values()].some((e) => e.dueMs <= nowMs)).toBe(false);
        }
        break;
      }
      case 'load': {
        const entries = o.entries.map((e) => ({
          id: ID_POOL[e.key]!,
          dueMs: clampDue(nowMs, e.offset),
          tag: tagOf(e.offset),
        }));
        const ids = entries.map((e) => e.id);
        const clash = new Set(ids).size !== ids.length || ids.some((id) => model.has(id));
        if (clash) {
          expect(codeOf(() => wheel.load(entries))).toBe(WheelErrorCode.DuplicateId);
        } else {
          wheel.load(entries);
          for (const e of entries) {
            const handle = wheel.handleOf(e.id)!;
            model.set(e.id, { dueMs: e.dueMs, handle, tag: e.tag });
            handles.push(handle);
          }
        }
        break;
      }
    }
    checkNextDue();
  }

  // None lost: advancing to the end of time returns every remaining entry, in order.
  nowMs = Number.MAX_SAFE_INTEGER;
  for (let calls = 0; wheel.size > 0; calls++) {
    expect(calls).toBeLessThan(100_000);
    advanceOnce(7);
  }
  expect(model.size).toBe(0);
  expect(wheel.nextDueMs()).toBeUndefined();
}

describe('TimingWheel against a sorted reference model', () => {
  it(`agrees on random operation sequences (${RUNS} runs)`, () => {
    fc.assert(
      fc.property(config, fc.array(op, { maxLength: 60 }), (cfg, ops) => run(cfg, ops)),
      { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: true },
    );
  }, 600_000);
});
