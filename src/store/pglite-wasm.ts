import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';

/**
 * PGlite's WebAssembly (9 MB), compiled: the embedded service's thread starts this once its
 * modules are loaded (`baselineTierOnly` first, for a command that runs once), and the compile runs
 * on V8's background threads while it builds the app (PGlite itself compiles it only once it is
 * opened). Read at once and synchronously: read on the thread pool, the compile would start only
 * when the caller's thread is next idle. A module of its own, importing nothing of PGlite.
 */
export function compilePgliteWasm(): Promise<WebAssembly.Module> {
  try {
    const dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    return WebAssembly.compile(readFileSync(join(dir, 'pglite.wasm')));
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Keeps PGlite's WebAssembly compiled from now on V8's baseline compiler (Liftoff), never tiered up:
 * optimising compiles much of the 9 MB module a second time in the background, peak memory and CPU
 * that a command of seconds does not earn back (an apply to a new directory took half as long
 * again without it). Process-wide, and it must come before the compile (set once PGlite's module
 * is compiled, it does not stop the tier-up). Call it as late as that allows: a V8 flag set while
 * the process runs makes V8 refuse Node's code cache for every built-in module compiled after it
 * (the flags' hash changes, and setting it back does not restore it).
 */
export function baselineTierOnly(): void {
  setFlagsFromString('--liftoff-only');
}
