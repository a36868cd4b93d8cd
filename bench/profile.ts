/**
 * What bench/plan-alloc.ts and bench/watch-latency.ts share: their flags, the bench's size at
 * `--scale N`, and V8 profiles summed per function.
 */
import { FULL, type BenchSize } from './reconcile-manifests.js';

export function flag(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

/** The bench's tree at `--scale N`: N times every count. */
export function scaledSize(scale: number): BenchSize {
  return { ...FULL, edges: FULL.edges * scale, cas: FULL.cas * scale, backends: FULL.backends * scale };
}

export interface CallFrame { functionName: string; url: string }

/** A function as a profile row: its name and its file under src/, node_modules/ or bench/. */
export function frameLabel(f: CallFrame): string {
  return `${f.functionName || '(anonymous)'} ${f.url ? f.url.replace(/^.*\/(src|node_modules|bench)\//, '$1/') : '(native)'}`;
}

export interface CpuProfile { nodes: { id: number; callFrame: CallFrame; children?: number[] }[]; samples: number[]; timeDeltas: number[] }

/**
 * Adds a CPU profile's self time per function, in ms, into `into`. A built-in (Map#set, an
 * iterator's next) is named with the function that called it; the profiler's own calls and idle
 * time are left out.
 */
export function cpuBySelf(profile: CpuProfile, into: Map<string, number>): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const nameOf = (id: number): string => {
    const n = byId.get(id)!;
    if (n.callFrame.url) return frameLabel(n.callFrame);
    let p = parent.get(id);
    while (p !== undefined && !byId.get(p)!.callFrame.url) p = parent.get(p);
    return `${frameLabel(n.callFrame)} ← ${p === undefined ? '(root)' : frameLabel(byId.get(p)!.callFrame)}`;
  };
  profile.samples.forEach((id, i) => {
    const name = nameOf(id);
    if (name.includes('node:inspector') || name.startsWith('(idle)')) return;
    into.set(name, (into.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
}
