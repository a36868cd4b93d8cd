import { describe, expect, it } from 'vitest';
import { positionInValue } from '../../src/reconciler/policy/positions.js';

/** Where `word` of the expression is, found through its YAML form. */
function at(text: string, line: number, col: number, decoded: string, word: string) {
  const { line: l, col: c } = positionInValue(text, { file: 'f', line, col }, decoded, decoded.indexOf(word));
  return [l, c, text.split('\n')[l - 1].slice(c - 1, c - 1 + word.length)];
}

describe('a place in an expression, in its YAML file', () => {
  it.each([
    ['plain', 'rules:\n  - expression: has(object.a) || objcet.b\n', 2, 17, 'has(object.a) || objcet.b'],
    ['single-quoted, with a quote doubled', "e: 'a == ''x'' && objcet'\n", 1, 4, "a == 'x' && objcet"],
    ['double-quoted, with escapes', 'e: "a == \\"x\\" && objcet"\n', 1, 4, 'a == "x" && objcet'],
    ['literal block', 'e: |\n  has(object.a) ||\n    has(objcet.b)\n', 1, 4, 'has(object.a) ||\n  has(objcet.b)\n'],
    ['folded block', 'e: >-\n  has(object.a) ||\n  has(objcet.b)\n', 1, 4, 'has(object.a) || has(objcet.b)'],
  ])('%s', (_, text, line, col, decoded) => {
    const [, , found] = at(text, line, col, decoded, 'objcet');
    expect(found).toBe('objcet');
  });

  it('the end of the expression (a missing operand) is just past its last character', () => {
    const text = 'e: object.name ==\nnext: 1\n';
    expect(positionInValue(text, { file: 'f', line: 1, col: 4 }, 'object.name ==', 14)).toEqual({ file: 'f', line: 1, col: 18 });
  });
});
