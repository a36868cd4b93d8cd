#!/usr/bin/env node
// `npm run build`: compiles src/ to dist/ with tsc (tsconfig.build.json), then copies the files the
// compiled code reads at run time from beside itself: SQL migrations, the status page's static
// files, and the generated validators and PGlite template; last, bundles the compiled modules and
// their dependencies into a few files (scripts/bundle.mjs). Plain JavaScript, so building needs no TypeScript loader. Run by `prepare`
// (after `npm ci` in a clone) and `prepack`; a dist/ newer than every source is left as it is
// unless `--force` is given.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle } from './bundle.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const stamp = join(dist, '.built');

const newest = (p) => {
  const st = statSync(p);
  return st.isDirectory() ? Math.max(st.mtimeMs, ...readdirSync(p).map((f) => newest(join(p, f)))) : st.mtimeMs;
};
const inputs = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'scripts/build.mjs', 'scripts/bundle.mjs'].map((p) => join(root, p));
if (!process.argv.includes('--force') && existsSync(stamp) && statSync(stamp).mtimeMs >= Math.max(...inputs.map(newest))) {
  process.exit(0);
}

rmSync(dist, { recursive: true, force: true });
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
cpSync(join(root, 'src/store/migrations'), join(dist, 'store/migrations'), { recursive: true });
// The status page's style sheet and script, served from beside the compiled plugin.
cpSync(join(root, 'src/service/ui/static'), join(dist, 'service/ui/static'), { recursive: true });
// (The service's validators and response serializers are directories: a file per schema,
// `src/service/generated-by-key.ts`.)
for (const f of readdirSync(join(root, 'src/generated'))) {
  if (!f.endsWith('.d.ts')) cpSync(join(root, 'src/generated', f), join(dist, 'generated', f), { recursive: true });
}
await bundle(dist);
writeFileSync(stamp, '');
