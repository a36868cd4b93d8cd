import { describe, expect, it } from 'vitest';
import { Scratch } from '../../src/util/scratch.js';

describe('Scratch, a list reused for item after item', () => {
  it('holds what was pushed since it was last emptied, and take() hands exactly those over', () => {
    const s = new Scratch<string>();
    const none: string[] = [];
    expect(s.take(none)).toBe(none);
    s.push('a');
    s.push('b');
    s.push('c');
    expect([s.length, s.get(1), s.includes('c'), s.includes('d')]).toEqual([3, 'b', true, false]);
    expect(s.take(none)).toEqual(['a', 'b', 'c']);
    expect(s.length).toBe(0);
    s.push('d');
    expect(s.includes('a')).toBe(false); // what an earlier round held is not found in this one
    expect(s.take(undefined)).toEqual(['d']);
  });

  it('clear() lets go of the items it held', () => {
    const s = new Scratch<object>();
    const held = {};
    s.push(held);
    s.clear();
    expect(s.length).toBe(0);
    expect(s.get(0)).toBeUndefined();
  });
});
