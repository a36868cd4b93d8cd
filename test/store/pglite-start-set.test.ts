import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleLayout, START_SET_FILE, START_SET_V8, tracedCompiles, withStartSet, type StartSet } from '../../src/store/pglite-wasm.js';
import { pgliteVersion } from '../../src/store/pglite-template.js';
import { tsxModuleUrl } from '../../src/util/worker.js';

const pgliteWasm = () => readFileSync(join(dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite')), 'pglite.wasm'));
const committed = () => JSON.parse(readFileSync(START_SET_FILE, 'utf8')) as StartSet & { count: number; readsCount: number };

/** (module (import "m" "f" (func)) (func (export "a") (result i32) i32.const 7) (func (export "b") (result i32) i32.const 8)) */
const TINY = Uint8Array.from([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x08, 0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f, // types: () -> (), () -> i32
  0x02, 0x07, 0x01, 0x01, 0x6d, 0x01, 0x66, 0x00, 0x00, // import m.f: func type 0
  0x03, 0x03, 0x02, 0x01, 0x01, // two functions of type 1
  0x07, 0x09, 0x02, 0x01, 0x61, 0x00, 0x01, 0x01, 0x62, 0x00, 0x02, // exports a = func 1, b = func 2
  0x0a, 0x0b, 0x02, 0x04, 0x00, 0x41, 0x07, 0x0b, 0x04, 0x00, 0x41, 0x08, 0x0b, // code
]);

describe('the start set: PGlite functions compiled with the module', () => {
  it('reads a module\'s layout: where its code starts, its functions imported and defined', () => {
    expect(moduleLayout(TINY)).toEqual({ codeSection: 43, imports: 1, functions: 2 });
    expect(moduleLayout(TINY.subarray(0, 30)), 'truncated').toBeUndefined();
    expect(moduleLayout(Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8])), 'not a module').toBeUndefined();
  });

  it('puts one hint per function defined before the code section, and the module still runs', () => {
    const set: StartSet = { pglite: 'x', wasmBytes: TINY.length, functions: 2, imports: 1, set: Buffer.from([0b10]).toString('base64') };
    const hinted = withStartSet(TINY, set)!;
    const mod = new WebAssembly.Module(hinted);
    const [section] = WebAssembly.Module.customSections(mod, 'compilationHints');
    // Count 2, then function a: lazy (0x01), function b: compiled with the module, on Liftoff only (0x16).
    expect([...new Uint8Array(section)]).toEqual([2, 0x01, 0x16]);
    const { exports } = new WebAssembly.Instance(mod, { m: { f: () => {} } }) as unknown as { exports: { a: () => number; b: () => number } };
    expect([exports.a(), exports.b()]).toEqual([7, 8]);
  });

  it('a command that only reads gets the reading commands\' set', () => {
    const set: StartSet = { pglite: 'x', wasmBytes: TINY.length, functions: 2, imports: 1, set: Buffer.from([0b11]).toString('base64'), reads: Buffer.from([0b01]).toString('base64') };
    const hints = (reads: boolean) => [...new Uint8Array(WebAssembly.Module.customSections(new WebAssembly.Module(withStartSet(TINY, set, reads)!), 'compilationHints')[0])];
    expect(hints(false)).toEqual([2, 0x16, 0x16]);
    expect(hints(true)).toEqual([2, 0x16, 0x01]);
  });

  it('gives no hints for a set made from another module', () => {
    const set: StartSet = { pglite: 'x', wasmBytes: TINY.length, functions: 2, imports: 1, set: 'Ag==' };
    expect(withStartSet(TINY, { ...set, wasmBytes: TINY.length + 1 })).toBeUndefined();
    expect(withStartSet(TINY, { ...set, functions: 3 })).toBeUndefined();
    expect(withStartSet(TINY, { ...set, imports: 0 })).toBeUndefined();
    expect(withStartSet(TINY, { ...set, set: 'AgI=' }), 'a bitmap of another length').toBeUndefined();
    expect(withStartSet(TINY, undefined)).toBeUndefined();
  });

  it('the committed set was made from the installed PGlite (else: npm run pglite-start-set)', () => {
    const set = committed();
    expect(set.pglite, 'src/generated/pglite-start-set.json').toBe(pgliteVersion());
    expect(withStartSet(pgliteWasm(), set), 'the set fits pglite.wasm').toBeDefined();
    expect(set.count).toBeGreaterThan(1000);
    expect(set.count).toBeLessThan(set.functions / 2);
    // The reading commands' set: part of the whole one, and smaller.
    const [all, reads] = [Buffer.from(set.set, 'base64'), Buffer.from(set.reads!, 'base64')];
    expect(reads.every((byte, i) => (byte & ~all[i]) === 0)).toBe(true);
    expect(set.readsCount).toBeLessThan(set.count);
  });

  // V8 prints each function it compiles, to stdout, which is a file here: written to a pipe, lines
  // are lost once it is full (Node makes it non-blocking). A child process: V8 flags are process-wide.
  // The embedded engine, whatever the suite runs the service on.
  const { DATABASE_URL: _, ...withoutDatabaseUrl } = process.env;
  const compiledIn = (startSet: 'on' | 'off') => {
    const dir = mkdtempSync(join(tmpdir(), 'edgeplane-start-set-'));
    try {
      const out = openSync(join(dir, 'stdout'), 'w');
      const child = spawnSync(process.execPath, ['--trace-wasm-compilation-times', '--import', tsxModuleUrl('.'), fileURLToPath(new URL('./fixtures/start-set-child.ts', import.meta.url))], {
        env: { ...withoutDatabaseUrl, EDGEPLANE_PGLITE_START_SET: startSet }, encoding: 'utf8', stdio: ['ignore', out, 'pipe'], timeout: 120_000,
      });
      closeSync(out);
      // The engine opened and answered, and nothing else was said (no warning from the flags).
      expect(child.stderr).toMatch(/^migrations=[1-9]\d*\n$/);
      expect(child.status).toBe(0);
      // PGlite's module: the one with the most functions compiled.
      const [pglite, ...others] = tracedCompiles(readFileSync(join(dir, 'stdout'), 'utf8')).map((m) => m.map((c) => c.tier));
      // initdb.wasm, compiled after the engine's module and never called, compiled lazily: not its
      // 538 functions. (A module compiled while the engine's compile runs is compiled whole: here
      // tsx's lexer, 44 small functions; Node's own, compiled earlier, ~50.)
      expect(others.filter((m) => m.length > 100)).toEqual([]);
      return pglite;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it.runIf(process.versions.v8.startsWith(`${START_SET_V8}.`))('a command that runs once compiles the set with the module, on Liftoff only, and the rest as it is called', () => {
    const set = committed();
    const lazily = compiledIn('off');
    const withSet = compiledIn('on');
    // Without the set, V8 compiles what the start calls (fewer than the set, which holds the
    // commands' statements too); with it, the set and the few functions outside it that are called.
    expect(lazily.length).toBeLessThan(set.count);
    expect(withSet.length).toBeGreaterThanOrEqual(set.count);
    expect(withSet.length - set.count, 'functions outside the set compiled as they are called').toBeLessThan(lazily.length / 4);
    expect(new Set([...lazily, ...withSet])).toEqual(new Set(['Liftoff']));
  }, 60_000);
});
