import { describe, expect, it } from 'vitest';
import { nestsDeeperThan, unstorableText } from '../../src/util/text.js';

describe('unstorableText', () => {
  it('names every place holding text the database refuses, keys too, in document order', () => {
    const v = { a: 'ok', b: ['x', 'bad\u0000', { 'k\ud800': 1, c: ['\udc00'] }], d: { e: 'fine' } };
    expect(unstorableText(v)).toEqual([
      { path: ['b', 1], key: false },
      { path: ['b', 2, 'k\ud800'], key: true },
      { path: ['b', 2, 'c', 0], key: false },
    ]);
    expect(unstorableText(v, { first: true })).toEqual([{ path: ['b', 1], key: false }]);
    expect(unstorableText({ a: ['\ud83d\ude00'] })).toEqual([]); // a surrogate pair is fine
  });

  it('walks a value nested 200,000 levels deep in linear work, and names the full path', () => {
    let v: unknown = 'x\u0000';
    for (let i = 0; i < 200_000; i++) v = [v];
    const [found] = unstorableText(v, { first: true });
    expect(found.path).toHaveLength(200_000);
    expect(found.path.every((s) => s === 0)).toBe(true);
  });
});

describe('nestsDeeperThan', () => {
  it('counts levels of arrays and objects, not scalars', () => {
    expect(nestsDeeperThan('x', 0)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan({ a: [1, { b: 2 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [1, { b: [] }] }, 3)).toBe(true);
  });
});
