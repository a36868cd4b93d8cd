import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';

/**
 * PGlite's WebAssembly (9 MB), compiled: the embedded service's thread starts this once its
 * modules are loaded, and the compile runs on V8's background threads while it builds the app
 * (PGlite itself compiles it only once it is opened). Read at once and synchronously: read on the
 * thread pool, the compile would start only when the caller's thread is next idle. A module of its
 * own, importing nothing of PGlite.
 *
 * `once`: for a command that runs once (the CLI's `engineTier`; not `serve`, `watch`, `agent`):
 * - The code stays on V8's baseline compiler (Liftoff), never tiered up: optimising compiles much
 *   of the module a second time in the background, peak memory and CPU that a command of seconds
 *   does not earn back (an apply to a new directory took half as long again without it).
 * - The functions a command's engine start and first statements run (the start set,
 *   `pglite-start-set.json`) are compiled by this compile, on the background threads, and the rest
 *   stays lazy. Otherwise V8 compiles each of PGlite's functions on its first call, on the thread
 *   that runs PGlite: some 2,800 of its 13,700 at a command's start, which the service's thread
 *   (the command's critical path) paid for as it opened the engine and ran its first statements.
 *   Done with V8's compilation hints, a section of the module that says, per function, whether to
 *   compile it with the module or lazily (`withStartSet`); only on the V8 it was tried on
 *   (`START_SET_V8`), and only when the set was made from the installed PGlite: else as before.
 *
 * Both are V8 flags, process-wide, set just before the compile: once PGlite's module is compiled,
 * `--liftoff-only` no longer stops the tier-up, and a flag set while the process runs makes V8
 * refuse Node's code cache for every built-in module compiled after it (the flags' hash changes,
 * and setting it back does not restore it), so the caller compiles as late as that allows.
 */
export function compilePgliteWasm(opts: { once?: boolean; readsOnly?: boolean } = {}): Promise<WebAssembly.Module> {
  try {
    const wasm = readFileSync(join(pgliteDist(), 'pglite.wasm'));
    if (!opts.once) return WebAssembly.compile(wasm);
    setFlagsFromString('--liftoff-only');
    const withHints = startSetEnabled() ? withStartSet(wasm, readStartSet(), opts.readsOnly) : undefined;
    if (!withHints) return WebAssembly.compile(wasm);
    setFlagsFromString('--experimental-wasm-compilation-hints');
    setFlagsFromString('--no-wasm-lazy-compilation');
    // Once this compile has settled, other modules compile lazily again (with no hints, the flag
    // would have all of their functions compiled at once: PGlite's initdb.wasm, Node's llhttp).
    const lazyAgain = () => setFlagsFromString('--wasm-lazy-compilation');
    return WebAssembly.compile(withHints).then((module) => {
      lazyAgain();
      return module;
    }, () => {
      // Refused (a V8 that reads the section otherwise): compiled lazily, as without a set.
      lazyAgain();
      return WebAssembly.compile(wasm);
    });
  } catch (err) {
    return Promise.reject(err);
  }
}

const pgliteDist = () => dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));

/** The V8 (major.minor) the compilation hints were tried on: Node 20's. Elsewhere the module compiles lazily, as it did. */
export const START_SET_V8 = '11.3';

/**
 * The start set: which of PGlite's functions a command's start and first statements call, written
 * by `npm run pglite-start-set` (scripts/write-pglite-start-set.ts) for the installed PGlite.
 * `functions` and `imports` are the module's counts of functions defined and imported, `wasmBytes`
 * its size: a set made from another build of PGlite does not fit (`withStartSet`). `set`: one bit
 * per function defined, base64; `reads`: the same for the commands that only read (plan, export),
 * a smaller set (less to compile, and less memory for the code of functions they never call).
 */
export interface StartSet { pglite: string; wasmBytes: number; functions: number; imports: number; set: string; reads?: string }

export const START_SET_FILE = fileURLToPath(new URL('../generated/pglite-start-set.json', import.meta.url));

function readStartSet(): StartSet | undefined {
  try {
    return JSON.parse(readFileSync(START_SET_FILE, 'utf8')) as StartSet;
  } catch {
    return undefined;
  }
}

/** EDGEPLANE_PGLITE_START_SET=off: every function compiled on its first call (how the start set is measured). */
function startSetEnabled(): boolean {
  return process.env.EDGEPLANE_PGLITE_START_SET !== 'off' && process.versions.v8.split('.').slice(0, 2).join('.') === START_SET_V8;
}

/** Hint bytes (V8's compilation hints proposal): strategy in bits 0–1, baseline tier 2–3, top tier 4–5. */
const HINT_LAZY = 0x01;
const HINT_EAGER_LIFTOFF = 0x02 | (0x01 << 2) | (0x01 << 4);

/**
 * `wasm` with a `compilationHints` section inserted before its code section: the start set's
 * functions (`reads`: the set of the commands that only read, if there is one) compiled with the
 * module (Liftoff), the others lazily. Undefined when the set does not fit the module (its size, or
 * its counts of functions).
 */
export function withStartSet(wasm: Uint8Array, start: StartSet | undefined, reads = false): Uint8Array<ArrayBuffer> | undefined {
  if (!start || start.wasmBytes !== wasm.length) return undefined;
  const layout = moduleLayout(wasm);
  if (!layout || layout.functions !== start.functions || layout.imports !== start.imports) return undefined;
  const bits = Buffer.from((reads && start.reads) || start.set, 'base64');
  if (bits.length !== Math.ceil(start.functions / 8)) return undefined;
  const hints = new Uint8Array(start.functions);
  for (let i = 0; i < start.functions; i++) hints[i] = bits[i >> 3] & (1 << (i & 7)) ? HINT_EAGER_LIFTOFF : HINT_LAZY;
  const name = Buffer.from('compilationHints');
  const payloadLength = uleb(name.length).length + name.length + uleb(start.functions).length + hints.length;
  const parts = [wasm.subarray(0, layout.codeSection), [0], uleb(payloadLength), uleb(name.length), name, uleb(start.functions), hints, wasm.subarray(layout.codeSection)];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * What V8 compiled, per WebAssembly module, read from the output of `--trace-wasm-compilation-times`
 * (how the start set is made and tested): each module's compiles, function index and tier, the
 * module with the most first (PGlite's, in a process that runs it; Node and tsx compile small
 * modules of their own).
 */
export function tracedCompiles(trace: string): { index: number; tier: string }[][] {
  const perModule = new Map<string, { index: number; tier: string }[]>();
  for (const [, module, index, tier] of trace.matchAll(/^Compiled function (0x[0-9a-f]+)#(\d+) using (\w+)/gm)) {
    let compiles = perModule.get(module);
    if (!compiles) perModule.set(module, (compiles = []));
    compiles.push({ index: Number(index), tier });
  }
  return [...perModule.values()].sort((a, b) => b.length - a.length);
}

/** Where a module's code section starts, and its counts of functions imported and defined; undefined if it is not a module this reads. */
export function moduleLayout(wasm: Uint8Array): { codeSection: number; imports: number; functions: number } | undefined {
  if (wasm.length < 8 || wasm[0] !== 0 || wasm[1] !== 0x61 || wasm[2] !== 0x73 || wasm[3] !== 0x6d) return undefined;
  let imports = 0;
  let functions = 0;
  try {
    for (let at = 8; at < wasm.length;) {
      const id = wasm[at];
      const [size, body] = readUleb(wasm, at + 1);
      if (id === 2) imports = importedFunctions(wasm, body);
      else if (id === 3) functions = readUleb(wasm, body)[0];
      else if (id === 10) return { codeSection: at, imports, functions };
      at = body + size;
    }
  } catch { /* truncated */ }
  return undefined;
}

/** The count of function imports in an import section whose body starts at `at`. */
function importedFunctions(wasm: Uint8Array, at: number): number {
  let [count, p] = readUleb(wasm, at);
  let n = 0;
  const skipName = () => { const [len, q] = readUleb(wasm, p); p = q + len; };
  const skipLimits = () => { const flags = wasm[p++]; p = readUleb(wasm, p)[1]; if (flags & 1) p = readUleb(wasm, p)[1]; };
  while (count-- > 0) {
    skipName();
    skipName();
    const kind = wasm[p++];
    if (kind === 0) { n++; p = readUleb(wasm, p)[1]; }
    else if (kind === 1) { p++; skipLimits(); }
    else if (kind === 2) skipLimits();
    else if (kind === 3) p += 2;
    else if (kind === 4) { p++; p = readUleb(wasm, p)[1]; }
    else throw new Error(`import kind ${kind}`);
  }
  return n;
}

function readUleb(buf: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    if (at >= buf.length) throw new Error('truncated');
    const b = buf[at++];
    value += (b & 0x7f) * 2 ** shift;
    if (!(b & 0x80)) return [value, at];
    shift += 7;
  }
}

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}
