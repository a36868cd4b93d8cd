import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

/**
 * The whole project type-checks under strict settings: sources, tests, benches and scripts
 * (tsconfig.json). Vitest runs TypeScript without checking it, so without this a test (or a
 * bench) with a type error would pass here and fail `npm run typecheck` only.
 */
it('npm run typecheck passes: no type error in src, test, bench, bin or scripts', async () => {
  const run = await promisify(execFile)(process.execPath, [TSC, '--noEmit', '-p', 'tsconfig.json'], { cwd: ROOT, maxBuffer: 16 << 20 })
    .then(() => ({ code: 0, out: '' }), (err: { code?: number; stdout?: string }) => ({ code: err.code ?? 1, out: err.stdout ?? String(err) }));
  expect(run.out).toBe('');
  expect(run.code).toBe(0);
}, 180_000);
