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
  // Short strings from a small alphabet that holds the characters sorting around the closing quote
  // (space, "!", '"', "#"), an escape, a control character and a surrogate half, so that prefixes,
  // ties and escapes are common.
  const str = fc.array(fc.constantFrom('a', 'b', ' ', '!', '"', '#', '\\', '\n', 'é', '\ud83d', 'Z'), { maxLength: 4 }).map((cs) => cs.join(''));

  // Elements as sets hold them: strings, references, and now and then something else.
  const element = fc.oneof(
    { weight: 4, arbitrary: str },
    { weight: 3, arbitrary: str.map(($ref) => ({ $ref })) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(1, null, { $ref: 'a', x: 1 }, ['a'], { a: 'b' }) },
  );
  const key = (x: unknown) => (typeof x === 'string' ? JSON.stringify(x) : canonicalJson(x));

  it('never says "in order" for a list that is not strictly increasing by JSON encoding', () => {
    fc.assert(fc.property(fc.array(element, { maxLength: 6 }), (v) => {
      if (inJsonOrder(v)) expect(v.every((x, i) => i === 0 || key(v[i - 1]) < key(x))).toBe(true);
      const byKey = new Map(v.map((x) => [key(x), x]));
      const sorted = [...byKey.keys()].sort().map((k) => byKey.get(k));
      // Sorted, deduplicated lists of plain strings and references (no escapes) are recognised as in order.
      const plain = (x: unknown): boolean => typeof x === 'string' ? !/["\\\u0000-\u001f\ud800-\udfff]/.test(x)
        : !!x && typeof x === 'object' && Object.keys(x).join() === '$ref' && plain((x as { $ref: unknown }).$ref);
      if (sorted.every(plain)) expect(inJsonOrder(sorted)).toBe(true);
    }), { numRuns: 5000 });
  });

  it('decides a prefix against the closing quote, as the encodings compare', () => {
    expect(inJsonOrder(['a', 'ab'])).toBe(true); // "a" < "ab": '"' < 'b'
    expect(inJsonOrder(['a', 'a!'])).toBe(false); // "a!" < "a": '!' < '"'
    expect(inJsonOrder(['a!', 'a'])).toBe(true);
    expect(inJsonOrder(['a', 'a'])).toBe(false); // duplicates are not a set in order
    expect(inJsonOrder(['a', 1])).toBe(false); // not plain strings: the caller encodes
    expect(inJsonOrder(['z', { $ref: 'a' }])).toBe(true); // "z" < {"$ref":"a"}: '"' < '{'
    expect(inJsonOrder([{ $ref: 'a' }, 'z'])).toBe(false);
    expect(inJsonOrder([{ $ref: 'a' }, { $ref: 'a!' }])).toBe(false); // {"$ref":"a!"} < {"$ref":"a"}
  });
});
