import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { golden } from '../helpers/scenario.js';

const CWD = join(import.meta.dirname, '..', '..');
const INVALID = join(CWD, 'test', 'fixtures', 'manifests', 'invalid');

/**
 * Negative manifests: each folder's expected.txt lists every problem, with file:line:col, path and
 * rule — all of them at once, in a stable order.
 */
describe('manifest validation reports every problem with its position', () => {
  it('--strict makes a literal secret an error', () => {
    const root = relative(CWD, join(INVALID, 'edges-and-routes'));
    const lenient = validateDir({ root, cwd: CWD, stack: 'prod' }).problems.find((p) => p.rule === 'literal-secret');
    const strict = validateDir({ root, cwd: CWD, stack: 'prod', strict: true }).problems.find((p) => p.rule === 'literal-secret');
    expect([lenient?.severity, strict?.severity]).toEqual(['warning', 'error']);
  });

  for (const name of readdirSync(INVALID).sort()) {
    it(name, () => {
      const dir = join(INVALID, name);
      const r = validateDir({ root: relative(CWD, dir), cwd: CWD, stack: 'prod' });
      expect(r.problems.some((p) => p.severity === 'error')).toBe(true);
      golden(join(dir, 'expected.txt'), r.problems.map(formatProblem).join('\n') + '\n');
    });
  }
});
