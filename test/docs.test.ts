import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

  it('documents every EDGEPLANE_ environment variable the sources read', () => {
    const src = readdirSync(new URL('../src', import.meta.url), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => read(`src/${f}`))
      .join('\n');
    const names = [...new Set(src.match(/EDGEPLANE_[A-Z0-9_]*[A-Z0-9]/g))];
    expect(names.length).toBeGreaterThan(10);
    const docs = ['README.md', ...readdirSync(new URL('../docs', import.meta.url)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
      .map(read)
      .join('\n');
    expect(names.filter((n) => !docs.includes(n))).toEqual([]);
  });

  it('links only to files that are there (the specification the docs refer to included), in the repository and in the package', () => {
    const pages = ['README.md', ...readdirSync(new URL('../docs', import.meta.url)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const broken: string[] = [];
    let links = 0;
    for (const page of pages) {
      for (const [, target] of read(page).matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
        links++;
        const file = new URL(target, new URL(`../${page}`, import.meta.url));
        if (!existsSync(file)) broken.push(`${page}: ${target}`);
      }
    }
    expect(links).toBeGreaterThan(20);
    expect(broken).toEqual([]);
    // The name a doc gives the specification is a file the package ships (docs/*.md).
    expect(read('docs/edges.md')).toContain('[api-spec.md](api-spec.md)');
    expect(existsSync(new URL('../docs/api-spec.md', import.meta.url))).toBe(true);
  });
});
