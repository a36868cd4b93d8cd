import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { identical } from '../../src/reconciler/plan/normalize.js';
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
