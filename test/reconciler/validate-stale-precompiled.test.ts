import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { golden } from '../helpers/scenario.js';

// Precompiled validators of another manifest schema (someone changed a kind and did not run
// `npm run schemas`): none of them may be used.
vi.mock('../../src/generated/manifest-validators.js', () => ({ SCHEMA_KEY: 'sstale' }));

const CWD = join(import.meta.dirname, '..', '..');
const INVALID = join(CWD, 'test', 'fixtures', 'manifests', 'invalid');

describe('manifest validation when the precompiled validators are stale', () => {
  it('compiles the current schema and reports the same problems', () => {
    for (const name of readdirSync(INVALID).sort()) {
      const dir = join(INVALID, name);
      const r = validateDir({ root: relative(CWD, dir), cwd: CWD, stack: 'prod' });
      golden(join(dir, 'expected.txt'), r.problems.map(formatProblem).join('\n') + '\n');
    }
  });
});
