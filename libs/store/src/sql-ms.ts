/** SQL fragments for timestamps, which cross the boundary as integer ms and convert exactly. */

/** An integer-ms expression as a timestamptz (no float seconds on the way). */
export const MS = (expr: string) => `('epoch'::timestamptz + (${expr}) * interval '1 millisecond')`;

/** Whole ms, floored: due_at is stored in whole ms, so floor(now) >= due_at still holds when due. */
export const MS_OF = (col: string) => `floor(extract(epoch FROM ${col}) * 1000)::float8`;
