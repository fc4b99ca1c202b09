import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_INSTANT_MS, MAX_SCHEDULE_ID_LENGTH, occurrenceId, type RecurrenceError } from './index';

const scheduleId = fc.stringMatching(/^[\x21-\x7e]{1,175}$/);
const atMs = fc.integer({ min: 0, max: MAX_INSTANT_MS });

describe('occurrenceId', () => {
  it('is `${scheduleId}@${ISO instant}`', () => {
    expect(occurrenceId('sch-42', Date.UTC(2026, 2, 8, 7))).toBe('sch-42@2026-03-08T07:00:00.000Z');
    expect(occurrenceId('3f2a9c1e-8b7d-4e6f-a5c4-000000000001', 0)).toBe(
      '3f2a9c1e-8b7d-4e6f-a5c4-000000000001@1970-01-01T00:00:00.000Z',
    );
  });

  it('is at most 200 printable ASCII characters without spaces, and injective', () => {
    fc.assert(
      fc.property(scheduleId, atMs, scheduleId, atMs, (idA, atA, idB, atB) => {
        const a = occurrenceId(idA, atA);
        expect(a.length).toBeLessThanOrEqual(200);
        expect(a).toMatch(/^[\x21-\x7e]+$/);
        expect(occurrenceId(idA, atA)).toBe(a);
        expect(a === occurrenceId(idB, atB)).toBe(idA === idB && atA === atB);
        // Splits back at the last '@'.
        const at = a.lastIndexOf('@');
        expect([a.slice(0, at), Date.parse(a.slice(at + 1))]).toEqual([idA, atA]);
      }),
    );
    expect(occurrenceId('x'.repeat(MAX_SCHEDULE_ID_LENGTH), MAX_INSTANT_MS)).toHaveLength(200);
  });

  it('rejects ids and instants it cannot encode with SCHED_E_INVALID_ARGUMENT', () => {
    const cases: [string, number][] = [
      ['', 0],
      ['has space', 0],
      ['ünïcode', 0],
      ['tab\t', 0],
      ['x'.repeat(MAX_SCHEDULE_ID_LENGTH + 1), 0],
      ['ok', -1],
      ['ok', 1.5],
      ['ok', MAX_INSTANT_MS + 1],
    ];
    for (const [id, at] of cases) {
      let code = 'OK';
      try {
        occurrenceId(id, at);
      } catch (err) {
        code = (err as RecurrenceError).code;
      }
      expect(code, `${id} ${at}`).toBe('SCHED_E_INVALID_ARGUMENT');
    }
  });
});
