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
  const code = `import(${JSON.stringify(tsxModuleUrl('./esm/api'))}).then((m) => { m.register({ tsconfig: ${JSON.stringify(tsconfig)} }); return import(${JSON.stringify(module.href)}); })`;
  return new Worker(code, { ...opts, eval: true, execArgv: [] });
}

/**
 * The file URL of an ES module tsx exports (`.` is its `--import` loader, `./esm/api` its
 * `register`), read from tsx's package.json: by absolute URL, because a bare `tsx` would be looked
 * up from the working directory. Tests and benchmarks that run the sources use it too.
 */
export function tsxModuleUrl(subpath: '.' | './esm/api'): string {
  const pkg = createRequire(import.meta.url).resolve('tsx/package.json');
  const entry = (JSON.parse(readFileSync(pkg, 'utf8')) as { exports: Record<string, string | { import: string | { default: string } }> }).exports[subpath];
  const file = typeof entry === 'string' ? entry : typeof entry.import === 'string' ? entry.import : entry.import.default;
  return pathToFileURL(join(dirname(pkg), file)).href;
}
