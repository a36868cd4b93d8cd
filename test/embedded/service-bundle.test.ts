import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { serviceBundle } from '../../src/embedded/service-bundle.js';

/** A small module tree in the shape of the service's: a TypeScript entry importing one of ours and a package, and a file found next to its source. */
function sources() {
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-bundle-src-'));
  mkdirSync(join(dir, 'store', 'migrations'), { recursive: true });
  writeFileSync(join(dir, 'store', 'migrations', '001.sql'), 'select 1;\n');
  writeFileSync(join(dir, 'store', 'migrate.ts'), [
    "import { readFileSync } from 'node:fs';",
    "import { fileURLToPath } from 'node:url';",
    "const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));",
    "export const first = (): string => readFileSync(DIR + '001.sql', 'utf8');",
    "export const VERSION: number = 1;",
  ].join('\n'));
  writeFileSync(join(dir, 'entry.ts'), [
    "import { first, VERSION } from './store/migrate.ts';",
    "import { parse } from 'yaml';",
    "export const out = { sql: first(), version: VERSION, yaml: parse('a: 1') as unknown };",
  ].join('\n'));
  return dir;
}

/** Bundles import packages by name: kept under this project's node_modules, as the real ones are, they find them. */
const cacheRoot = join(fileURLToPath(new URL('../../node_modules/.cache/', import.meta.url)), 'edgeplane-test');
const newCacheDir = () => (mkdirSync(cacheRoot, { recursive: true }), mkdtempSync(join(cacheRoot, 'b-')));

describe('the service bundle (the embedded thread runs it without a TypeScript loader)', () => {
  it('runs as the sources do: packages imported, files found next to each module\'s own source', async () => {
    const src = sources();
    const cacheDir = newCacheDir();
    const file = await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir });
    expect(file).toBeDefined();
    expect(file!.startsWith(cacheDir)).toBe(true);
    const mod = await import(pathToFileURL(file!).href);
    expect(mod.out).toEqual({ sql: 'select 1;\n', version: 1, yaml: { a: 1 } });
  });

  it('is built once and used while its inputs are unchanged; a changed module gets a new bundle', async () => {
    const src = sources();
    const cacheDir = newCacheDir();
    const file = (await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir }))!;
    const built = statSync(file).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    expect(await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir })).toBe(file);
    expect(statSync(file).mtimeMs).toBe(built);

    writeFileSync(join(src, 'store', 'migrate.ts'), readFileSync(join(src, 'store', 'migrate.ts'), 'utf8').replace('VERSION: number = 1', 'VERSION: number = 2'));
    expect(await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir })).toBe(file);
    expect(statSync(file).mtimeMs).toBeGreaterThan(built);
    expect(readFileSync(file, 'utf8')).toMatch(/VERSION = 2/);
  });

  it('a bundle changed after it was built, or a record vouching for no inputs, is built again, not run', async () => {
    const src = sources();
    const cacheDir = newCacheDir();
    const file = (await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir }))!;
    // Planted: the bundle replaced, its record left as it was.
    writeFileSync(file, 'export const out = "planted";\n');
    expect(await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir })).toBe(file);
    expect(readFileSync(file, 'utf8')).not.toContain('planted');
    // Planted with a record of its own that lists no inputs (nothing to find changed).
    const meta = JSON.parse(readFileSync(`${file}.json`, 'utf8'));
    writeFileSync(file, 'export const out = "planted";\n');
    writeFileSync(`${file}.json`, JSON.stringify({ ...meta, inputs: {}, bundle: createHash('sha256').update('export const out = "planted";\n').digest('base64url') }));
    expect(await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir })).toBe(file);
    expect(readFileSync(file, 'utf8')).not.toContain('planted');
    const mod = await import(pathToFileURL(file).href + '?again');
    expect(mod.out.version).toBe(1);
  });

  it('no bundle where none can be written (the caller then runs the sources with tsx)', async () => {
    const src = sources();
    const blocked = join(newCacheDir(), 'a-file');
    writeFileSync(blocked, '');
    expect(await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir: join(blocked, 'sub') })).toBeUndefined();
  });

  it('a bundle whose inputs cannot be built is none', async () => {
    const src = sources();
    writeFileSync(join(src, 'entry.ts'), 'import { nothing } from "../client/missing.ts";\nexport const out = nothing;\n');
    expect(await serviceBundle({ entry: join(src, 'entry.ts'), cacheDir: newCacheDir() })).toBeUndefined();
  });
});
