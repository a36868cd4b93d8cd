// `npm run pglite-start-set`: writes src/generated/pglite-start-set.json, the PGlite functions a
// command's engine start and first statements call (see `compilePgliteWasm` in
// src/store/pglite-wasm.ts, which has V8 compile them with the module). Run it after upgrading
// PGlite; a test fails until then (commands still work meanwhile: the module compiles lazily).
//
// It runs the CLI's commands from the sources on a new state directory with the start set off
// (EDGEPLANE_PGLITE_START_SET=off: every function compiled on its first call) and V8 tracing each
// compile, and keeps every function compiled: apply to a new state directory, a plan and an apply
// with nothing to do, export and destroy, on examples/small and examples/full.
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { moduleLayout, START_SET_FILE, tracedCompiles, type StartSet } from '../src/store/pglite-wasm.js';
import { pgliteVersion } from '../src/store/pglite-template.js';
import { tsxModuleUrl } from '../src/util/worker.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const wasmFile = join(root, 'node_modules/@electric-sql/pglite/dist/pglite.wasm');
const wasm = readFileSync(wasmFile);
const layout = moduleLayout(wasm);
if (!layout) throw new Error(`${wasmFile}: not a module this reads`);

const work = mkdtempSync(join(tmpdir(), 'edgeplane-start-set-'));
const env: NodeJS.ProcessEnv = { ...process.env, EDGEPLANE_PGLITE_START_SET: 'off', NO_COLOR: '1' };
for (const name of ['DATABASE_URL', 'EDGEPLANE_API_URL', 'EDGEPLANE_STATE', 'CI']) delete env[name];
// examples/full's secrets (sealed in the database: the engine's paths for them are in the set too).
for (const name of ['SHOP_GITHUB_CLIENT_SECRET', 'SHOP_OIDC_CLIENT_SECRET', 'SHOP_STRIPE_WEBHOOK_SECRET']) env[name] = `start-set-${name.toLowerCase()}`;
const compiled = new Set<number>();
/** What the commands that only read (plan, export) compiled. */
const read = new Set<number>();
const commands: string[] = [];
try {
  for (const example of ['small', 'full']) {
    const dir = join(root, 'examples', example);
    const state = join(work, example);
    for (const args of [['apply', dir, '--auto-approve'], ['plan', dir], ['apply', dir, '--auto-approve'], ['export', '--out', join(work, `${example}-export`)], ['destroy', dir, '--auto-approve']]) {
      // V8's trace goes to stdout, a file here: written to a pipe, lines are lost once it is full.
      const traceFile = join(work, 'trace');
      const trace = openSync(traceFile, 'w');
      const r = spawnSync(process.execPath, ['--trace-wasm-compilation-times', '--import', tsxModuleUrl('.'), join(root, 'src/cli/main.ts'), ...args, '--state', state], { cwd: work, env, encoding: 'utf8', stdio: ['ignore', trace, 'pipe'] });
      closeSync(trace);
      if (r.status !== 0) throw new Error(`edgeplane ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
      const indices = (tracedCompiles(readFileSync(traceFile, 'utf8'))[0] ?? []).map((c) => c.index);
      for (const index of indices) {
        compiled.add(index);
        if (args[0] === 'plan' || args[0] === 'export') read.add(index);
      }
      if (indices.length < 500) throw new Error(`edgeplane ${args.join(' ')}: ${indices.length} of PGlite's functions compiled (did it run on the embedded engine?)`);
      commands.push(`${args[0]} examples/${example}${args[0] === 'apply' && commands.includes(`apply examples/${example}`) ? ' (nothing to do)' : ''}`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** One bit per function defined, base64, and how many are set. */
function bitmap(indices: Set<number>): [string, number] {
  const bits = Buffer.alloc(Math.ceil(layout!.functions / 8));
  let count = 0;
  for (const index of indices) {
    const i = index - layout!.imports;
    if (i < 0 || i >= layout!.functions) continue;
    bits[i >> 3] |= 1 << (i & 7);
    count++;
  }
  return [bits.toString('base64'), count];
}
const [set, count] = bitmap(compiled);
const [reads, readsCount] = bitmap(read);
const startSet: StartSet & { commands: string[]; count: number; readsCount: number } = {
  pglite: pgliteVersion(), wasmBytes: statSync(wasmFile).size, functions: layout.functions, imports: layout.imports, count, readsCount, commands, set, reads,
};
writeFileSync(START_SET_FILE, JSON.stringify(startSet, null, 2) + '\n');
process.stdout.write(`wrote ${relative(process.cwd(), START_SET_FILE)}: ${count} of PGlite's ${layout.functions} functions (${readsCount} for the commands that only read)\n`);
