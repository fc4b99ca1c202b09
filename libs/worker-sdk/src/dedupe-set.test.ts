import { describe, expect, it } from 'vitest';
import { DedupeSet } from './dedupe-set.js';

describe('DedupeSet', () => {
  it('refuses an id it holds and forgets the oldest beyond its capacity', () => {
    const d = new DedupeSet(3);
    expect(['a', 'b', 'c'].map((x) => d.add(x))).toEqual([true, true, true]);
    expect(d.add('b')).toBe(false);
    expect(d.add('d')).toBe(true); // evicts a
    expect(d.size).toBe(3);
    expect(d.add('a')).toBe(true); // a was forgotten; evicts b
    expect(d.add('c')).toBe(false);
    expect(d.add('b')).toBe(true);
  });

  it('evicts in arrival order across many wraps of its ring', () => {
    const d = new DedupeSet(1_000);
    for (let i = 0; i < 10_500; i++) expect(d.add(`e-${i}`)).toBe(true);
    expect(d.size).toBe(1_000);
    expect(d.add('e-9500')).toBe(false); // the newest 1,000 are held
    expect(d.add('e-9499')).toBe(true); // the one before them is gone
  });
});
