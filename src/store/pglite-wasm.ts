import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * PGlite's WebAssembly (9 MB), compiled: whoever will open the engine starts this first, so the
 * compile runs on V8's background threads while it loads everything else (PGlite itself compiles
 * it only once it is opened). Read at once, not streamed, on the thread pool: the caller's thread
 * is left only the compile's own start. A module of its own, importing nothing
 * of PGlite: the CLI's main thread starts the compile for the embedded service's thread
 * (`startSpare`), which loads PGlite meanwhile, and a compiled module passes between threads.
 */
export async function compilePgliteWasm(): Promise<WebAssembly.Module> {
  const dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  return WebAssembly.compile(await readFile(join(dir, 'pglite.wasm')));
}
