import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layer picture of docs/architecture.md, kept as data in docs/layers.json: each folder of
 * src/ imports only itself and the folders listed for it. Imports are read by the TypeScript
 * compiler's own pre-processor (static, dynamic and type-only imports, re-exports), not by a
 * pattern.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const rules = JSON.parse(readFileSync(join(ROOT, 'docs/layers.json'), 'utf8')) as Record<string, string[]>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.(m|c)?[jt]s$/.test(e.name) ? [p] : [];
  });
}

const layerOf = (file: string) => relative(SRC, file).split('/')[0];

/** Every import of `file` that leaves its layer for one it may not use, as `file: layer -> target (specifier)`. */
export function crossings(file: string, text: string): string[] {
  const layer = layerOf(file);
  const may = rules[layer];
  const out: string[] = [];
  for (const ref of ts.preProcessFile(text, true, true).importedFiles) {
    if (!ref.fileName.startsWith('.')) continue;
    const target = layerOf(resolve(dirname(file), ref.fileName));
    if (target === layer) continue;
    if (target.startsWith('..') || !may?.includes(target)) out.push(`${relative(ROOT, file)}: ${layer} -> ${target} (${ref.fileName})`);
  }
  return out;
}

describe('layers (docs/layers.json)', () => {
  const files = sourceFiles(SRC);

  it('names a rule for every folder of src/', () => {
    const folders = [...new Set(files.map(layerOf))].filter((f) => !f.includes('.'));
    expect(folders.filter((f) => !(f in rules))).toEqual([]);
  });

  it('has no import that crosses the layers', () => {
    const bad = files.flatMap((f) => crossings(f, readFileSync(f, 'utf8')));
    expect(bad).toEqual([]);
  });

  it('catches a crossing import of each form', () => {
    const kindsFile = join(SRC, 'kinds/x.ts');
    expect(crossings(kindsFile, `import { a } from '../service/app.js';`)).toHaveLength(1);
    expect(crossings(kindsFile, `import type { Db } from '../store/db.js';`)).toHaveLength(1);
    expect(crossings(kindsFile, `export { b } from '../reconciler/x.js';`)).toHaveLength(1);
    expect(crossings(kindsFile, `const m = await import('../embedded/engine.js');`)).toHaveLength(1);
    expect(crossings(kindsFile, `import { c } from '../contract/errors.js'; import d from 'ajv';`)).toEqual([]);
    expect(crossings(join(SRC, 'client/x.ts'), `import { e } from '../cli/main.js';`)).toHaveLength(1);
  });
});
