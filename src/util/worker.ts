import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * The URL of a module beside `fromUrl` (a caller's `import.meta.url`), by its name without
 * extension: `.js` in the built package (dist/), `.ts` when the caller itself runs from the
 * sources (tests and the dev loop).
 */
export function siblingModule(fromUrl: string, name: string): URL {
  return new URL(`./${name}${fromUrl.endsWith('.ts') ? '.ts' : '.js'}`, fromUrl);
}

/**
 * A worker thread running `module`. Compiled JavaScript runs as it is, with no loader (execArgv
 * `[]`: not the flags or loaders this process was given). A TypeScript module (the sources, under
 * a test runner or tsx) gets tsx registered inside the thread first, with edgeplane's own
 * tsconfig: a worker inherits no loader from its parent, and tsx is a development dependency the
 * installed package never needs.
 */
export function startWorker(module: URL, opts: Omit<WorkerOptions, 'eval' | 'execArgv'> = {}): Worker {
  if (!module.pathname.endsWith('.ts')) return new Worker(module, { ...opts, execArgv: [] });
  const tsconfig = fileURLToPath(new URL('../../tsconfig.json', import.meta.url));
  const code = `import(${JSON.stringify(pathToFileURL(tsxEsmApi()).href)}).then((m) => { m.register({ tsconfig: ${JSON.stringify(tsconfig)} }); return import(${JSON.stringify(module.href)}); })`;
  return new Worker(code, { ...opts, eval: true, execArgv: [] });
}

/** The ES module of tsx's `esm/api` export (its `import` condition), found from its package.json. */
function tsxEsmApi(): string {
  const pkg = createRequire(import.meta.url).resolve('tsx/package.json');
  const exports = (JSON.parse(readFileSync(pkg, 'utf8')) as { exports: Record<string, { import: { default: string } }> }).exports;
  return join(dirname(pkg), exports['./esm/api'].import.default);
}
