/**
 * `npm run bench:plan-alloc`: where a no-op plan's memory goes. The bench's manifests (default
 * 1,000 edges × 5 routes + 100 CAs + 100 failover backends; `--scale N` as bench:reconcile) are
 * applied once to an embedded service, the list pages are recorded, and the no-op plan
 * (`preparePlan`: load, validate, fetch, diff) is run against those pages replayed from memory,
 * as bench:reconcile's replayed-plan row does. Each plan runs under V8's sampling heap profiler,
 * keeping the objects that were collected too, so the figure is what the plan allocated, not what
 * it kept. Prints the bytes allocated per plan and the functions that allocated the most.
 *
 * With `--cpu`, the same plans run under V8's CPU profiler instead, and the functions that took the
 * most time (self) are listed.
 *
 * With `--gc`, the plans run with no profiler, and each one's wall time, CPU time and GC pauses
 * (by kind) are printed.
 *
 * Flags: --scale N (default 1)  --runs N (default 3)  --top N (default 20)  --cpu  --gc
 */
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { preparePlan } from '../src/reconciler/plan/prepare.js';
import { appliedStack } from './applied-stack.js';
import { cpuBySelf, flag, frameLabel, scaledSize, type CallFrame, type CpuProfile } from './profile.js';
import { objectCount } from './reconcile-manifests.js';

const SCALE = Number(flag('scale', '1'));
const RUNS = Number(flag('runs', '3'));
const TOP = Number(flag('top', '20'));
const CPU = process.argv.includes('--cpu');
const GC = process.argv.includes('--gc');
const SIZE = scaledSize(SCALE);
const CACHE = join(fileURLToPath(new URL('./', import.meta.url)), '.cache');

interface ProfileNode { callFrame: CallFrame; selfSize: number; children: ProfileNode[] }

function bySelf(root: ProfileNode): Map<string, number> {
  const out = new Map<string, number>();
  const label = frameLabel;
  // A built-in (Map#set, an iterator's next) is named with the function that called it.
  const walk = (n: ProfileNode, caller: string) => {
    const own = label(n.callFrame);
    const name = n.callFrame.url ? own : `${own} ← ${caller}`;
    out.set(name, (out.get(name) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c, n.callFrame.url ? own : caller);
  };
  walk(root, '(root)');
  return out;
}

async function main() {
  const { manifests, client, replay, pages } = await appliedStack(SIZE, CACHE);
  try {
    const pageBytes = [...pages.values()].reduce((s, p) => s + p.text.length, 0);

    if (GC) {
      // Wall time and the GC pauses inside it, by kind, per plan (no profiler running).
      const { PerformanceObserver, constants } = await import('node:perf_hooks');
      const KIND: Record<number, string> = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
      let pauses = new Map<string, { n: number; ms: number }>();
      const obs = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          const k = KIND[(e as unknown as { detail: { kind: number } }).detail.kind] ?? 'other';
          const p = pauses.get(k) ?? { n: 0, ms: 0 };
          p.n++; p.ms += e.duration; pauses.set(k, p);
        }
      });
      obs.observe({ entryTypes: ['gc'] });
      for (let i = 0; i < RUNS + 1; i++) {
        pauses = new Map();
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const p = await preparePlan({ root: manifests, stack: 'bench', env: {} }, replay);
        const wall = performance.now() - t0;
        const c = process.cpuUsage(c0);
        await new Promise((r) => setImmediate(r)); // the observer's entries of this plan
        if (p.plan!.steps.length) throw new Error(`no-op plan has ${p.plan!.steps.length} steps`);
        const gc = [...pauses].map(([k, v]) => `${k} ${v.n}× ${v.ms.toFixed(0)} ms`).join(', ');
        console.log(`${i === 0 ? 'warm-up' : `run ${i}`}: wall ${wall.toFixed(0)} ms, CPU ${((c.user + c.system) / 1000).toFixed(0)} ms, GC ${gc}, heap after ${(process.memoryUsage().heapUsed / 1048576).toFixed(0)} MB`);
      }
      obs.disconnect();
      return;
    }
    const session = new Session();
    session.connect();
    if (CPU) {
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 500 });
      const walls: number[] = [];
      const merged = new Map<string, number>();
      for (let i = 0; i < RUNS + 1; i++) {
        await session.post('Profiler.start');
        const t0 = performance.now();
        const p = await preparePlan({ root: manifests, stack: 'bench', env: {} }, replay);
        const wall = performance.now() - t0;
        const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
        if (p.plan!.steps.length) throw new Error(`no-op plan has ${p.plan!.steps.length} steps`);
        if (i === 0) continue;
        walls.push(wall);
        const self = new Map<string, number>();
        cpuBySelf(profile, self);
        for (const [k, v] of self) merged.set(k, (merged.get(k) ?? 0) + v / RUNS);
      }
      session.disconnect();
      walls.sort((a, b) => a - b);
      const total = [...merged.values()].reduce((a, b) => a + b, 0);
      console.log(`objects ${objectCount(SIZE)}: no-op plan against replayed pages, median ${walls[Math.floor(walls.length / 2)]!.toFixed(0)} ms (runs: ${walls.map((w) => w.toFixed(0)).join(', ')} ms)`);
      console.log(`\ntop ${TOP} functions by time (self, mean per plan, ms):`);
      for (const [k, v] of [...merged].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${v.toFixed(0).padStart(8)}  ${(100 * v / total).toFixed(1).padStart(5)} %  ${k}`);
      return;
    }
    await session.post('HeapProfiler.enable');
    const totals: number[] = [];
    let merged = new Map<string, number>();
    for (let i = 0; i < RUNS + 1; i++) {
      await session.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      const p = await preparePlan({ root: manifests, stack: 'bench', env: {} }, replay);
      const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: ProfileNode } };
      if (p.plan!.steps.length) throw new Error(`no-op plan has ${p.plan!.steps.length} steps`);
      if (i === 0) continue; // warm-up
      const self = bySelf(profile.head);
      totals.push([...self.values()].reduce((a, b) => a + b, 0));
      for (const [k, v] of self) merged.set(k, (merged.get(k) ?? 0) + v / RUNS);
    }
    session.disconnect();
    const mb = (b: number) => (b / 1048576).toFixed(1);
    totals.sort((a, b) => a - b);
    const median = totals[Math.floor(totals.length / 2)]!;
    console.log(`objects ${objectCount(SIZE)}, list pages ${pages.size} (${mb(pageBytes)} MB of JSON text)`);
    console.log(`allocated per no-op plan: median ${mb(median)} MB (runs: ${totals.map(mb).join(', ')} MB)`);
    console.log(`\ntop ${TOP} functions by bytes allocated (self, mean per plan):`);
    merged = new Map([...merged].sort((a, b) => b[1] - a[1]).slice(0, TOP));
    for (const [k, v] of merged) console.log(`${mb(v).padStart(8)} MB  ${(100 * v / median).toFixed(1).padStart(5)} %  ${k}`);
  } finally {
    await client.close();
  }
}

await main();
