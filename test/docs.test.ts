import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOG } from '../src/contract/errors.js';

const read = (p: string) => readFileSync(new URL(`../${p}`, import.meta.url), 'utf8');

describe('documentation', () => {
  it('lists every error code of the catalog with its status', () => {
    const doc = read('docs/api.md');
    for (const [code, { status }] of Object.entries(ERROR_CATALOG)) {
      expect(doc, code).toMatch(new RegExp(`\\| \`${code}\` \\| ${status} \\|`));
    }
  });

  it('shows the test command .ci/run runs', () => {
    expect(read('README.md')).toContain('npm test');
    expect(read('.ci/run')).toMatch(/^npm test$/m);
  });
});
