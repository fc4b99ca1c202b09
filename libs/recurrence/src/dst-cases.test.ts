import { describe, expect, it } from 'vitest';
import { compileRecurrence, type DstRepeatedPolicy, type DstSkippedPolicy } from './index';

/** Occurrences of a cron on one local day (queried over the UTC day around it) as readable tuples. */
function day(
  timeZone: string,
  cron: string,
  date: string,
  policies: { dstSkipped?: DstSkippedPolicy; dstRepeated?: DstRepeatedPolicy } = {},
) {
  const rec = compileRecurrence({
    cron,
    intervalMs: null,
    timeZone,
    startAtMs: null,
    endAtMs: null,
    ...policies,
  });
  const mid = Date.parse(`${date}T12:00:00Z`);
  const page = rec.between(mid - 36 * 3_600_000, mid + 36 * 3_600_000, 10_000);
  return {
    occurrences: page.occurrences
      .filter((o) => o.localWall.startsWith(date))
      .map((o) => [new Date(o.atMs).toISOString(), o.localWall.slice(11), o.local, o.dst]),
    skipped: page.skipped
      .filter((s) => s.localWall.startsWith(date))
      .map((s) => [s.localWall.slice(11), new Date(s.atMs).toISOString()]),
  };
}

describe('America/New_York', () => {
  it('spring 2026-03-08 (02:00 → 03:00): a daily 02:30 shifts to 03:00 EDT, or is skipped', () => {
    expect(day('America/New_York', '30 2 * * *', '2026-03-08').occurrences).toEqual([
      ['2026-03-08T07:00:00.000Z', '02:30:00', '2026-03-08T03:00:00-04:00', 'SHIFTED'],
    ]);
    expect(day('America/New_York', '30 2 * * *', '2026-03-08', { dstSkipped: 'SKIP' })).toEqual({
      occurrences: [],
      skipped: [['02:30:00', '2026-03-08T07:00:00.000Z']],
    });
  });

  it('spring: gap wall times landing on one instant give one occurrence', () => {
    // 02:00-02:45 all shift to 03:00, where 03:00 itself exists: one occurrence, the real 03:00.
    const every15 = day('America/New_York', '*/15 1-3 * * *', '2026-03-08').occurrences;
    expect(every15.map((o) => o[1])).toEqual([
      '01:00:00',
      '01:15:00',
      '01:30:00',
      '01:45:00',
      '03:00:00',
      '03:15:00',
      '03:30:00',
      '03:45:00',
    ]);
    expect(every15[4]).toEqual(['2026-03-08T07:00:00.000Z', '03:00:00', '2026-03-08T03:00:00-04:00', 'NONE']);
    // Only 02:xx: one shifted occurrence, named after the first wall time.
    expect(day('America/New_York', '*/15 2 * * *', '2026-03-08').occurrences).toEqual([
      ['2026-03-08T07:00:00.000Z', '02:00:00', '2026-03-08T03:00:00-04:00', 'SHIFTED'],
    ]);
    expect(
      day('America/New_York', '*/15 2 * * *', '2026-03-08', { dstSkipped: 'SKIP' }).skipped.map((s) => s[0]),
    ).toEqual(['02:00:00', '02:15:00', '02:30:00', '02:45:00']);
  });

  it('fall 2026-11-01 (02:00 → 01:00): a daily 01:30 fires first, last or both', () => {
    const first = ['2026-11-01T05:30:00.000Z', '01:30:00', '2026-11-01T01:30:00-04:00', 'REPEATED_FIRST'];
    const second = ['2026-11-01T06:30:00.000Z', '01:30:00', '2026-11-01T01:30:00-05:00', 'REPEATED_SECOND'];
    expect(day('America/New_York', '30 1 * * *', '2026-11-01').occurrences).toEqual([first]);
    expect(day('America/New_York', '30 1 * * *', '2026-11-01', { dstRepeated: 'LAST' }).occurrences).toEqual([
      second,
    ]);
    expect(day('America/New_York', '30 1 * * *', '2026-11-01', { dstRepeated: 'BOTH' }).occurrences).toEqual([
      first,
      second,
    ]);
  });

  it('fall: every 15 minutes fires once per wall time with FIRST (not again in the second pass), twice with BOTH', () => {
    const walls = (p: DstRepeatedPolicy) =>
      day('America/New_York', '*/15 0-2 * * *', '2026-11-01', { dstRepeated: p }).occurrences.map(
        (o) => o[2],
      );
    expect(walls('FIRST')).toEqual([
      ...['00:00', '00:15', '00:30', '00:45', '01:00', '01:15', '01:30', '01:45'].map(
        (t) => `2026-11-01T${t}:00-04:00`,
      ),
      ...['02:00', '02:15', '02:30', '02:45'].map((t) => `2026-11-01T${t}:00-05:00`),
    ]);
    expect(walls('BOTH')).toEqual([
      ...['00:00', '00:15', '00:30', '00:45', '01:00', '01:15', '01:30', '01:45'].map(
        (t) => `2026-11-01T${t}:00-04:00`,
      ),
      ...['01:00', '01:15', '01:30', '01:45', '02:00', '02:15', '02:30', '02:45'].map(
        (t) => `2026-11-01T${t}:00-05:00`,
      ),
    ]);
  });

  it('six-field cron: seconds count', () => {
    expect(day('America/New_York', '15 30 2 * * *', '2026-03-08').occurrences).toEqual([
      ['2026-03-08T07:00:00.000Z', '02:30:15', '2026-03-08T03:00:00-04:00', 'SHIFTED'],
    ]);
  });
});

describe('other zones', () => {
  it('Europe/London: 01:00 → 02:00 on 2026-03-29, 02:00 → 01:00 on 2026-10-25', () => {
    expect(day('Europe/London', '30 1 * * *', '2026-03-29').occurrences).toEqual([
      ['2026-03-29T01:00:00.000Z', '01:30:00', '2026-03-29T02:00:00+01:00', 'SHIFTED'],
    ]);
    expect(day('Europe/London', '30 1 * * *', '2026-10-25', { dstRepeated: 'LAST' }).occurrences).toEqual([
      ['2026-10-25T01:30:00.000Z', '01:30:00', '2026-10-25T01:30:00+00:00', 'REPEATED_SECOND'],
    ]);
  });

  it('Australia/Lord_Howe: 30-minute shifts', () => {
    // 2026-10-04 02:00 +10:30 → 02:30 +11:00: every hour, 02:00 shifts to 02:30.
    expect(day('Australia/Lord_Howe', '0 1-3 * * *', '2026-10-04').occurrences).toEqual([
      ['2026-10-03T14:30:00.000Z', '01:00:00', '2026-10-04T01:00:00+10:30', 'NONE'],
      ['2026-10-03T15:30:00.000Z', '02:00:00', '2026-10-04T02:30:00+11:00', 'SHIFTED'],
      ['2026-10-03T16:00:00.000Z', '03:00:00', '2026-10-04T03:00:00+11:00', 'NONE'],
    ]);
    // 2026-04-05 02:00 +11:00 → 01:30 +10:30: 01:30-01:59 is repeated, 01:15 is not.
    expect(
      day('Australia/Lord_Howe', '15,45 1 * * *', '2026-04-05', { dstRepeated: 'BOTH' }).occurrences,
    ).toEqual([
      ['2026-04-04T14:15:00.000Z', '01:15:00', '2026-04-05T01:15:00+11:00', 'NONE'],
      ['2026-04-04T14:45:00.000Z', '01:45:00', '2026-04-05T01:45:00+11:00', 'REPEATED_FIRST'],
      ['2026-04-04T15:15:00.000Z', '01:45:00', '2026-04-05T01:45:00+10:30', 'REPEATED_SECOND'],
    ]);
  });

  it('Asia/Kolkata: no DST, +05:30 all year', () => {
    for (const date of ['2026-03-08', '2026-03-29', '2026-11-01']) {
      const [o] = day('Asia/Kolkata', '30 2 * * *', date).occurrences;
      expect(o).toEqual([
        new Date(Date.parse(`${date}T02:30:00+05:30`)).toISOString(),
        '02:30:00',
        `${date}T02:30:00+05:30`,
        'NONE',
      ]);
    }
  });

  it('Pacific/Chatham: +12:45/+13:45, transitions at 02:45 and 03:45', () => {
    expect(day('Pacific/Chatham', '0 3 * * *', '2026-09-27').occurrences).toEqual([
      ['2026-09-26T14:00:00.000Z', '03:00:00', '2026-09-27T03:45:00+13:45', 'SHIFTED'],
    ]);
    expect(day('Pacific/Chatham', '0 3 * * *', '2026-04-05', { dstRepeated: 'BOTH' }).occurrences).toEqual([
      ['2026-04-04T13:15:00.000Z', '03:00:00', '2026-04-05T03:00:00+13:45', 'REPEATED_FIRST'],
      ['2026-04-04T14:15:00.000Z', '03:00:00', '2026-04-05T03:00:00+12:45', 'REPEATED_SECOND'],
    ]);
  });

  it('America/Santiago: transitions at midnight', () => {
    // 2026-09-06 00:00 -04 → 01:00 -03: midnight itself does not exist.
    expect(day('America/Santiago', '0 0 * * *', '2026-09-06').occurrences).toEqual([
      ['2026-09-06T04:00:00.000Z', '00:00:00', '2026-09-06T01:00:00-03:00', 'SHIFTED'],
    ]);
    // 2026-04-05 00:00 -03 → 2026-04-04 23:00 -04: 23:xx of the 4th is repeated.
    expect(day('America/Santiago', '30 23 * * *', '2026-04-04').occurrences).toEqual([
      ['2026-04-05T02:30:00.000Z', '23:30:00', '2026-04-04T23:30:00-03:00', 'REPEATED_FIRST'],
    ]);
  });

  it('Antarctica/Troll: two-hour shifts', () => {
    // 2026-03-29 01:00 +00 → 03:00 +02.
    expect(day('Antarctica/Troll', '0 2 * * *', '2026-03-29').occurrences).toEqual([
      ['2026-03-29T01:00:00.000Z', '02:00:00', '2026-03-29T03:00:00+02:00', 'SHIFTED'],
    ]);
    // 2026-10-25 03:00 +02 → 01:00 +00.
    expect(
      day('Antarctica/Troll', '30 1,2 * * *', '2026-10-25', { dstRepeated: 'LAST' }).occurrences,
    ).toEqual([
      ['2026-10-25T01:30:00.000Z', '01:30:00', '2026-10-25T01:30:00+00:00', 'REPEATED_SECOND'],
      ['2026-10-25T02:30:00.000Z', '02:30:00', '2026-10-25T02:30:00+00:00', 'REPEATED_SECOND'],
    ]);
  });

  it('America/Nuuk: the gap ends at midnight, so a shifted 23:30 fires on the next local day', () => {
    // 2026-03-28 23:00 -02 → 2026-03-29 00:00 -01.
    expect(day('America/Nuuk', '30 23 * * *', '2026-03-28').occurrences).toEqual([
      ['2026-03-29T01:00:00.000Z', '23:30:00', '2026-03-29T00:00:00-01:00', 'SHIFTED'],
    ]);
  });
});
