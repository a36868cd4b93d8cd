import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * PGlite's WebAssembly (9 MB), compiled: whoever will open the engine starts this first, so the
 * compile runs on V8's background threads while it loads everything else (PGlite itself compiles
 * it only once it is opened). Read at once and synchronously: read on the thread pool, the compile
 * would start only when the caller's thread is next idle, which a thread loading modules is not for
 * hundreds of ms. Its start takes the calling thread some 40 ms. A module of its own, importing nothing
 * of PGlite: the CLI's main thread starts the compile for the embedded service's thread
 * (`startSpare`), which loads PGlite meanwhile, and a compiled module passes between threads.
 */
export function compilePgliteWasm(): Promise<WebAssembly.Module> {
  try {
    const dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    return WebAssembly.compile(readFileSync(join(dir, 'pglite.wasm')));
  } catch (err) {
    return Promise.reject(err);
  }
}
