import type { Step } from './types.js';

/**
 * Orders steps so every step follows its dependencies; among steps that are ready, non-deletes go
 * first (creates and updates of referenced objects, then referrers) and deletes last, each group in
 * the order the planner produced them. Dependencies on steps not in the plan are dropped.
 */
export function orderSteps(steps: Step[]): Step[] {
  const byId = new Map(steps.map((s, i) => [s.id, { s, i }]));
  for (const s of steps) s.dependsOn = [...new Set(s.dependsOn.filter((d) => byId.has(d) && d !== s.id))];
  const waiting = new Map(steps.map((s) => [s.id, s.dependsOn.length]));
  const dependents = new Map<string, string[]>();
  for (const s of steps) for (const d of s.dependsOn) dependents.set(d, [...(dependents.get(d) ?? []), s.id]);
  const rank = (id: string) => {
    const { s, i } = byId.get(id)!;
    return (s.action === 'delete' ? 1_000_000 : 0) + i;
  };
  // Ready steps, kept sorted by descending rank so the next one pops off the end.
  const ready: string[] = [];
  const push = (id: string) => {
    const r = rank(id);
    let lo = 0;
    let hi = ready.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (rank(ready[mid]) > r) lo = mid + 1;
      else hi = mid;
    }
    ready.splice(lo, 0, id);
  };
  for (const s of steps) if (s.dependsOn.length === 0) push(s.id);
  const out: Step[] = [];
  while (ready.length) {
    const id = ready.pop()!;
    out.push(byId.get(id)!.s);
    for (const next of dependents.get(id) ?? []) {
      const left = waiting.get(next)! - 1;
      waiting.set(next, left);
      if (left === 0) push(next);
    }
  }
  if (out.length !== steps.length) {
    const done = new Set(out);
    const stuck = steps.filter((s) => !done.has(s)).map((s) => s.id);
    throw new Error(`planner produced a dependency cycle among: ${stuck.join(', ')}`);
  }
  return out;
}
