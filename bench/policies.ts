/**
 * `npm run bench:policies`: what a stack's policies cost a plan. The bench's manifests (1,000
 * edges × 5 routes + 100 CAs + 100 failover backends: 6,200 objects; `--scale N`) are applied
 * once to an embedded service (the state is kept in bench/.cache, shared with bench:plan-alloc),
 * the list pages are recorded, and the no-op plan (`preparePlan`) runs against them replayed from
 * memory: without policies, and with 10 (the starter set of examples/policies and five more that
 * match every route or edge) twice — warm (the process keeps compiled expressions and their
 * verdicts, as watch and the agent do) and cold (both forgotten first: a one-shot `plan`, apart
 * from loading the CEL library once) — the three rotated in each round. "With" includes loading
 * the policy files, as every plan does. Prints the medians and their ratios to the plan without
 * (target ≤ 1.10), of wall time and of the process's CPU time (steadier on a shared machine), the
 * GC inside each mode's timed plans (V8's `gc` entries), and the policies' own time measured
 * apart (loading and compiling; `checkPlan`).
 *
 * Flags: --scale N (default 1)  --rounds N (default 9; each round one plan of each, after a warm-up)
 * --cpu [--warm]: instead, V8's CPU profiler on plans without and with (cold, or warm), alternating:
 * self time per function, with minus without (where the policies' time goes).
 */
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { PerformanceObserver, constants as perf } from 'node:perf_hooks';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { preparePlan } from '../src/reconciler/plan/prepare.js';
import { checkPlan, clearPolicyCaches } from '../src/reconciler/policy/evaluate.js';
import { loadPolicyFiles, NO_POLICIES } from '../src/reconciler/policy/load.js';
import { appliedStack } from './applied-stack.js';
import { cpuBySelf, flag, scaledSize, type CpuProfile } from './profile.js';
import { objectCount } from './reconcile-manifests.js';
import { policyFiles } from './policy-files.js';

const SCALE = Number(flag('scale', '1'));
const ROUNDS = Number(flag('rounds', '9'));
const SIZE = scaledSize(SCALE);
const PROFILING = process.argv.includes('--cpu');
const HERE = fileURLToPath(new URL('./', import.meta.url));
const CACHE = join(HERE, '.cache');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type Mode = 'without' | 'warm' | 'cold';
const MODES: Mode[] = ['without', 'warm', 'cold'];

async function main() {
  const { manifests, client, replay } = await appliedStack(SIZE, CACHE);
  const files = policyFiles(CACHE);
  try {
    const wall = { without: [] as number[], warm: [] as number[], cold: [] as number[] };
    const cpu = { without: [] as number[], warm: [] as number[], cold: [] as number[] };
    const split = { warm: [] as number[][], cold: [] as number[][] };
    let results = 0;
    let checked = 0;
    // The collections that fall into each timed plan: V8's GC entries, matched to the plans by time afterwards.
    const gcs: { start: number; ms: number; major: boolean }[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcs.push({ start: e.startTime, ms: e.duration, major: (e as { detail?: { kind?: number } }).detail?.kind === perf.NODE_PERFORMANCE_GC_MAJOR });
    });
    observer.observe({ entryTypes: ['gc'] });
    const spans = { without: [] as [number, number][], warm: [] as [number, number][], cold: [] as [number, number][] };
    const run = async (mode: Mode) => {
      if (mode === 'cold') clearPolicyCaches();
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const p = await preparePlan({ root: manifests, stack: 'bench', env: {}, policies: mode === 'without' ? { set: NO_POLICIES, problems: [] } : loadPolicyFiles(files) }, replay);
      const c = process.cpuUsage(c0);
      spans[mode].push([t0, performance.now()]);
      wall[mode].push(performance.now() - t0);
      cpu[mode].push((c.user + c.system) / 1000);
      if (p.plan!.steps.length) throw new Error(`no-op plan has ${p.plan!.steps.length} steps`);
      if (mode === 'without' || PROFILING) return p; // profiled: the plan alone, no second load and check
      checked = p.plan!.policy!.checked.length;
      results = p.plan!.policy!.outcomes.reduce((n, o) => n + o.denied + o.warned, 0);
      // The split, outside the timed plan: the same load and check again, in the same state of the caches.
      if (mode === 'cold') clearPolicyCaches();
      const ms = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
      const u1 = process.cpuUsage();
      const loaded = loadPolicyFiles(files);
      const u2 = process.cpuUsage();
      checkPlan(loaded.set, { plan: p.plan!, desired: p.desired!, observed: p.observed });
      split[mode].push([ms(u2) - ms(u1), ms(process.cpuUsage()) - ms(u2)]);
      return p;
    };
    for (const m of MODES) await run(m);
    if (PROFILING) {
      const session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 200 });
      const self = [new Map<string, number>(), new Map<string, number>()];
      const withMode: Mode = process.argv.includes('--warm') ? 'warm' : 'cold';
      for (let i = 0; i < ROUNDS * 2; i++) {
        const policies = i % 2 === 1;
        await session.post('Profiler.start');
        await run(policies ? withMode : 'without');
        const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
        cpuBySelf(profile, self[policies ? 1 : 0]!);
      }
      session.disconnect();
      const names = new Set([...self[0]!.keys(), ...self[1]!.keys()]);
      const rows = [...names].map((n) => [n, ((self[1]!.get(n) ?? 0) - (self[0]!.get(n) ?? 0)) / ROUNDS] as const).sort((a, b) => b[1] - a[1]);
      const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0) / ROUNDS;
      console.log(`profiled CPU per plan: without ${total(self[0]!).toFixed(1)} ms, with ${total(self[1]!).toFixed(1)} ms; by function, with minus without:`);
      for (const [n, ms] of rows.slice(0, 40)) console.log(`${ms.toFixed(2).padStart(8)} ms  ${n}`);
      return;
    }
    for (const m of MODES) { wall[m].length = 0; cpu[m].length = 0; spans[m].length = 0; }
    split.warm.length = split.cold.length = 0;
    for (let i = 0; i < ROUNDS; i++) {
      // The order rotated each round: no mode always runs after the same other.
      for (let j = 0; j < MODES.length; j++) await run(MODES[(i + j) % MODES.length]!);
    }
    await new Promise((r) => setTimeout(r, 50)); // the last GC entries delivered
    observer.disconnect();
    const gcIn = (m: Mode) => spans[m].map(([a, b]) => gcs.filter((g) => g.start >= a && g.start < b));
    const gcLine = (m: Mode) => {
      const per = gcIn(m);
      return `GC in the plan (main thread) median ${median(per.map((x) => x.reduce((n, g) => n + g.ms, 0))).toFixed(1)} ms, major collections in ${per.filter((x) => x.some((g) => g.major)).length} of ${per.length} plans`;
    };
    console.log(`objects ${objectCount(SIZE)}, ${checked} policies (${results} failed rules), ${ROUNDS} rounds, the three alternating; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    const w0 = median(wall.without);
    const c0 = median(cpu.without);
    console.log(`no-op plan without policies: wall median ${w0.toFixed(0)} ms, CPU median ${c0.toFixed(0)} ms; ${gcLine('without')}`);
    for (const m of ['warm', 'cold'] as const) {
      const w = median(wall[m]);
      const c = median(cpu[m]);
      const load = median(split[m].map((x) => x[0]!));
      const check = median(split[m].map((x) => x[1]!));
      console.log(`with policies, ${m === 'warm' ? 'warm (a process that planned before: watch, agent)' : 'cold (compiled anew, no verdict kept: a one-shot plan)'}:`);
      console.log(`  wall ${w.toFixed(0)} ms = ${(w / w0).toFixed(3)}×; CPU ${c.toFixed(0)} ms = ${(c / c0).toFixed(3)}× (target ≤ 1.10)`);
      // Each round's plan with over its plan without (run next to each other, under the same load), their median.
      const paired = (xs: number[], ys: number[]) => median(xs.map((x, i) => x / ys[i]!));
      console.log(`  paired (median of the rounds' ratios): wall ${paired(wall[m], wall.without).toFixed(3)}×; CPU ${paired(cpu[m], cpu.without).toFixed(3)}×`);
      // The fastest plan of each: the one no major GC or other process fell into (a third of a
      // plan is GC, and whether a major collection lands in it swings a median by more than 10 %).
      const best = (xs: number[]) => Math.min(...xs);
      console.log(`  fastest of ${ROUNDS}: wall ${best(wall[m]).toFixed(0)} ms = ${(best(wall[m]) / best(wall.without)).toFixed(3)}×; CPU ${best(cpu[m]).toFixed(0)} ms = ${(best(cpu[m]) / best(cpu.without)).toFixed(3)}×`);
      console.log(`  ${gcLine(m)}`);
      console.log(`  CPU split (medians, measured apart): load and compile ${load.toFixed(1)} ms + check ${check.toFixed(1)} ms = ${(100 * (load + check) / c0).toFixed(1)} % of the plan's CPU without`);
    }
    console.log(`wall per round (without / warm / cold): ${wall.without.map((x, i) => `${x.toFixed(0)}/${wall.warm[i]!.toFixed(0)}/${wall.cold[i]!.toFixed(0)}`).join(', ')}`);
  } finally {
    await client.close();
  }
}

await main();
