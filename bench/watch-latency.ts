/**
 * `npm run bench:watch-latency`: where a watch session's save → applied time goes. A watch
 * session (the library, as bench:reconcile's watch row runs it) on a copy of the bench manifests,
 * against the embedded state bench:plan-alloc applied and cached in bench/.cache (build it first:
 * `npx tsx bench/plan-alloc.ts --runs 1 [--scale N]`). One edge's description is saved N times;
 * each save is timed from the write until the run that applied it reports, and split into phases:
 *
 *   file wait   write → the watcher's event (chokidar's awaitWriteFinish)
 *   debounce    event → run start
 *   load        reading every manifest file, parsing those that changed (`ManifestCache.loadFiles`)
 *   manifests   the saved files validated, checked against the others, their secrets read and
 *               desired objects built and compared with the previous run's (`DesiredState.update`)
 *   live read   GETs of what the save or the last apply touched (`readLive`), and the live
 *               state's indexes updated from their responses
 *   plan        the diff over the affected subset
 *   check       the files read again before applying (`changedSinceLoad`)
 *   apply       the apply's requests
 *   after       from the apply's report back to the harness, of which `bookkeeping` is the
 *               planner noting what the apply wrote
 *
 * Wall and CPU (this process: the embedded service runs here too) per phase, medians over the
 * saves. With `--cpu`, the saves run under V8's CPU profiler, and the functions that took the most
 * time (self) over the saves are listed.
 *
 * Flags: --scale N (default 1)  --runs N (default 10)  --top N (default 25)  --cpu
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '../src/client/api-client.js';
import type { Transport } from '../src/client/transport.js';
import { embeddedTransport } from '../src/embedded/embedded.js';
import { DesiredState } from '../src/reconciler/watch/desired-state.js';
import { IncrementalPlanner } from '../src/reconciler/watch/incremental.js';
import { ManifestCache } from '../src/reconciler/watch/manifest-cache.js';
import { WatchLoop } from '../src/reconciler/watch/loop.js';
import { startWatchSession, type WatchReport } from '../src/reconciler/watch/session.js';
import { cpuBySelf, flag, scaledSize, type CpuProfile } from './profile.js';
import { objectCount } from './reconcile-manifests.js';

const SCALE = Number(flag('scale', '1'));
const RUNS = Number(flag('runs', '10'));
const TOP = Number(flag('top', '25'));
const CPU = process.argv.includes('--cpu');
const SIZE = scaledSize(SCALE);
const CACHE = join(fileURLToPath(new URL('./', import.meta.url)), '.cache');

const now = () => performance.now();
const cpuNow = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Wall and CPU time spent in a phase during the current save. */
type Phase = { wall: number; cpu: number };
let current: Map<string, Phase> | undefined;
function add(name: string, wall: number, cpu: number): void {
  if (!current) return;
  const p = current.get(name) ?? { wall: 0, cpu: 0 };
  p.wall += wall;
  p.cpu += cpu;
  current.set(name, p);
}

/** Wraps a prototype method (sync or async) to count its wall and CPU time under `name`. */
function time(proto: object, method: string, name: string): void {
  const target = proto as Record<string, (...a: unknown[]) => unknown>;
  const orig = target[method]!;
  target[method] = function (this: unknown, ...args: unknown[]) {
    const [w0, c0] = [now(), cpuNow()];
    const out = orig.apply(this, args);
    if (out instanceof Promise) return out.finally(() => add(name, now() - w0, cpuNow() - c0));
    add(name, now() - w0, cpuNow() - c0);
    return out;
  };
}

// Instrumented from the outside: the session's code runs unchanged.
const P = IncrementalPlanner.prototype;
time(P, 'prepare', 'prepare');
time(DesiredState.prototype, 'update', 'manifests');
time(P, 'readLive', 'live read');
time(P, 'plan', 'plan');
time(P, 'applied', 'bookkeeping');
time(ManifestCache.prototype, 'loadFiles', 'load');
time(ManifestCache.prototype, 'changedSinceLoad', 'check');
let eventAt: number | undefined;
const notify = WatchLoop.prototype.notify;
WatchLoop.prototype.notify = function (this: WatchLoop, ...args: Parameters<WatchLoop['notify']>) {
  eventAt ??= now();
  return notify.apply(this, args);
};

/** Counts each request's wall time under the phase it belongs to (GETs before the plan, writes after). */
function timedTransport(t: Transport): Transport {
  return {
    target: t.target,
    async request(method, path, body, headers) {
      const [w0, c0] = [now(), cpuNow()];
      try {
        return await t.request(method, path, body, headers);
      } finally {
        add(method === 'GET' ? 'GET requests' : 'write requests', now() - w0, cpuNow() - c0);
        add(method === 'GET' ? 'GET count' : 'write count', 1, 0);
      }
    },
    readPages: t.readPages?.bind(t),
    readsAhead: t.readsAhead?.bind(t),
    close: () => t.close(),
  };
}

async function main() {
  const manifests = join(CACHE, `alloc-manifests-${SIZE.edges}-${SIZE.cas}`);
  const stateDir = join(CACHE, `alloc-state-${SIZE.edges}-${SIZE.cas}`);
  if (!existsSync(stateDir) || !existsSync(manifests)) throw new Error(`${stateDir} or ${manifests} missing: run npx tsx bench/plan-alloc.ts --runs 1 --scale ${SCALE} first`);
  const dir = mkdtempSync(join(tmpdir(), 'ep-bench-watch-'));
  cpSync(manifests, dir, { recursive: true });
  const t0 = now();
  const client = new ApiClient(timedTransport(await embeddedTransport(stateDir)));
  console.error(`state opened in ${((now() - t0) / 1000).toFixed(1)} s`);

  const reports: { at: number; r: WatchReport }[] = [];
  const waiters: (() => void)[] = [];
  const session = startWatchSession({
    input: { root: dir, stack: 'bench', env: {} }, client,
    report: (r) => { reports.push({ at: now(), r }); for (const w of waiters.splice(0)) w(); },
  });
  const until = async (pred: (r: WatchReport) => boolean, from: number) => {
    for (;;) {
      const hit = reports.slice(from).find((x) => pred(x.r));
      if (hit) return hit.at;
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  const profiler = CPU ? new Session() : undefined;
  try {
    const s0 = now();
    await session.ready;
    await until((r) => r.type === 'run-end', 0);
    const start = reports.find((x) => x.r.type === 'run-end')!.r as Extract<WatchReport, { type: 'run-end' }>;
    console.error(`session ready, first run ${start.status} in ${((now() - s0) / 1000).toFixed(1)} s`);

    const file = join(dir, 'edges-00.yaml');
    const text = readFileSync(file, 'utf8');
    if (!text.includes('description: bench edge 0\n')) throw new Error(`${file}: no edge-0 description`);
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.setSamplingInterval', { interval: 500 });
    }
    const self = new Map<string, number>();
    const saves: { total: number; cpu: number; phases: Map<string, Phase> }[] = [];
    // One save first, not counted: the first after start plans every object (the start's plan was full already, but warms nothing of the subset path).
    for (let i = 0; i <= RUNS; i++) {
      const mark = reports.length;
      current = new Map();
      eventAt = undefined;
      if (profiler && i > 0) await profiler.post('Profiler.start');
      const [w0, c0] = [now(), cpuNow()];
      writeFileSync(file, text.replace('description: bench edge 0\n', `description: bench edge 0 v${i + 1}\n`));
      const appliedAt = await until((r) => r.type === 'applied' && r.result.done.includes('HTTPSEdge/edge-0:update'), mark);
      const [w1, c1] = [now(), cpuNow()];
      await until((r) => r.type === 'run-end', mark);
      await session.idle();
      if (profiler && i > 0) {
        const { profile } = (await profiler.post('Profiler.stop')) as unknown as { profile: CpuProfile };
        cpuBySelf(profile, self);
      }
      const at = (type: WatchReport['type']) => reports.slice(mark).find((x) => x.r.type === type)?.at ?? NaN;
      const phases = current;
      current = undefined;
      phases.set('file wait', { wall: (eventAt ?? NaN) - w0, cpu: NaN });
      phases.set('debounce', { wall: at('run-start') - (eventAt ?? NaN), cpu: NaN });
      phases.set('after', { wall: w1 - appliedAt, cpu: NaN });
      phases.set('start → plan report', { wall: at('plan') - at('run-start'), cpu: NaN });
      phases.set('plan report → applied', { wall: appliedAt - at('plan'), cpu: NaN });
      if (i > 0) saves.push({ total: w1 - w0, cpu: c1 - c0, phases });
    }
    // Put edge-0 back as the manifests say (the state dir is kept for the next run).
    {
      const mark = reports.length;
      writeFileSync(file, text);
      await until((r) => r.type === 'applied', mark);
      await session.idle();
    }

    const m = (xs: number[]) => (xs.some(Number.isNaN) ? '-' : median(xs).toFixed(1)).padStart(8);
    const totals = saves.map((s) => s.total);
    console.log(`objects ${objectCount(SIZE)}: save → applied, ${RUNS} saves${CPU ? ' (under the CPU profiler)' : ''}`);
    console.log(`  median ${median(totals).toFixed(0)} ms wall (min ${Math.min(...totals).toFixed(0)}, max ${Math.max(...totals).toFixed(0)}), ${median(saves.map((s) => s.cpu)).toFixed(0)} ms CPU of this process`);
    console.log(`  runs: ${totals.map((t) => t.toFixed(0)).join(', ')} ms`);
    console.log(`\n  phase (median per save)      wall ms    CPU ms`);
    const order = ['file wait', 'debounce', 'start → plan report', 'prepare', 'load', 'manifests', 'live read', 'GET requests', 'GET count', 'plan', 'plan report → applied', 'check', 'write requests', 'write count', 'after', 'bookkeeping'];
    for (const name of order) {
      const vals = saves.map((s) => s.phases.get(name) ?? { wall: 0, cpu: 0 });
      const prep = name === 'prepare';
      console.log(`  ${(prep ? 'prepare (all of it)' : name).padEnd(26)}${m(vals.map((v) => v.wall))}  ${m(vals.map((v) => v.cpu))}`);
      if (prep) {
        // What prepare spent outside the parts timed on their own.
        const rest = saves.map((s) => {
          const g = (n: string) => s.phases.get(n) ?? { wall: 0, cpu: 0 };
          const parts = ['load', 'manifests', 'live read', 'plan'].map(g);
          return { wall: g('prepare').wall - parts.reduce((a, p) => a + p.wall, 0), cpu: g('prepare').cpu - parts.reduce((a, p) => a + p.cpu, 0) };
        });
        console.log(`  ${'  rest'.padEnd(26)}${m(rest.map((v) => v.wall))}  ${m(rest.map((v) => v.cpu))}`);
      }
    }
    if (profiler) {
      const total = [...self.values()].reduce((a, b) => a + b, 0);
      console.log(`\ntop ${TOP} functions by CPU time (self, mean per save, ms; ${(total / RUNS).toFixed(0)} ms per save in all):`);
      for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(v / RUNS).toFixed(1).padStart(8)}  ${(100 * v / total).toFixed(1).padStart(5)} %  ${k}`);
    }
  } finally {
    profiler?.disconnect();
    await session.stop();
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
