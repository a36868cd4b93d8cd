import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { identical, inJsonOrder } from '../../src/reconciler/plan/normalize.js';
import { canonicalJson } from '../../src/util/canonical-json.js';

/** The same JSON value with every object's keys in reverse order. */
function reversedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversedKeys);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reversedKeys(x)]));
  return v;
}

describe('identical (the planner settles unchanged objects with it)', () => {
  it('is structural equality with key order ignored: it agrees with comparing canonical JSON', () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    fc.assert(fc.property(json, json, (a, b) => {
      expect(identical(a, b)).toBe(canonicalJson(a) === canonicalJson(b));
      expect(identical(a, reversedKeys(a))).toBe(true);
    }), { numRuns: 2000 });
  });

  it('tells apart a key more, a key less, a key renamed, and array order', () => {
    expect(identical({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    expect(identical({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(identical({ a: 1, b: 2 }, { a: 1 })).toBe(false);
    expect(identical({ a: 1, b: 2 }, { a: 1, c: 2 })).toBe(false);
    expect(identical({ a: undefined }, { b: undefined })).toBe(false);
    expect(identical([1, 2], [2, 1])).toBe(false);
    expect(identical({ a: [] }, { a: {} })).toBe(false);
  });
});

describe('inJsonOrder (sets already in order are kept without encoding them)', () => {
  const strictlyIncreasingJson = (v: unknown[]) => v.every((x, i) => i === 0 || JSON.stringify(v[i - 1]) < JSON.stringify(x));
  // Short strings from a small alphabet that holds the characters sorting around the closing quote
  // (space, "!", '"', "#"), an escape, a control character and a surrogate half, so that prefixes,
  // ties and escapes are common.
  const str = fc.array(fc.constantFrom('a', 'b', ' ', '!', '"', '#', '\\', '\n', 'é', '\ud83d', 'Z'), { maxLength: 4 }).map((cs) => cs.join(''));

  it('never says "in order" for a list that is not strictly increasing by JSON encoding', () => {
    fc.assert(fc.property(fc.array(str, { maxLength: 6 }), (v) => {
      if (inJsonOrder(v)) expect(strictlyIncreasingJson(v)).toBe(true);
      const sorted = [...new Set(v)].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
      // Sorted, deduplicated lists of plain strings (no escapes) are recognised as in order.
      if (sorted.every((x) => !/["\\\u0000-\u001f\ud800-\udfff]/.test(x))) expect(inJsonOrder(sorted)).toBe(true);
    }), { numRuns: 5000 });
  });

  it('decides a prefix against the closing quote, as the encodings compare', () => {
    expect(inJsonOrder(['a', 'ab'])).toBe(true); // "a" < "ab": '"' < 'b'
    expect(inJsonOrder(['a', 'a!'])).toBe(false); // "a!" < "a": '!' < '"'
    expect(inJsonOrder(['a!', 'a'])).toBe(true);
    expect(inJsonOrder(['a', 'a'])).toBe(false); // duplicates are not a set in order
    expect(inJsonOrder(['a', 1])).toBe(false); // not plain strings: the caller encodes
  });
});
