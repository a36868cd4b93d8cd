import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PairTable } from '../../src/reconciler/policy/pair-table.js';

describe('PairTable (the policy check\'s ids and kept verdicts)', () => {
  it('gives what a Map of the same pairs gives, through growing and clearing', () => {
    const int = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    const small = fc.integer({ min: -3, max: 40 });
    const op = fc.oneof(
      { weight: 20, arbitrary: fc.tuple(fc.constant('put' as const), fc.oneof(small, int), fc.oneof(small, int), fc.integer({ min: 1, max: 2 ** 31 - 1 })) },
      { weight: 1, arbitrary: fc.tuple(fc.constant('clear' as const), fc.constant(0), fc.constant(0), fc.constant(0)) },
    );
    fc.assert(fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
      const t = new PairTable(4);
      const m = new Map<string, number>();
      for (const [kind, a, b, v] of ops) {
        if (kind === 'clear') {
          t.clear();
          m.clear();
          continue;
        }
        expect(t.valueAt(t.slot(a, b))).toBe(m.get(`${a},${b}`) ?? 0);
        t.put(t.slot(a, b), a, b, v);
        m.set(`${a},${b}`, v);
        expect(t.size).toBe(m.size);
      }
      for (const [k, v] of m) {
        const [a, b] = k.split(',').map(Number);
        expect(t.valueAt(t.slot(a!, b!))).toBe(v);
      }
    }));
  });
});
