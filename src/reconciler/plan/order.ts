import type { Step } from './types.js';
import { MinHeap } from '../../util/min-heap.js';

/**
 * Orders steps so every step follows its dependencies; among steps that are ready, non-deletes go
 * first (creates and updates of referenced objects, then referrers) and deletes last, each group in
 * the order the planner produced them. Returns copies of the steps, their dependencies on steps not
 * in the plan dropped and the others listed once (the steps given are not modified).
 */
export function orderSteps(given: readonly Step[]): Step[] {
  const known = new Set(given.map((s) => s.id));
  const steps = given.map((s) => ({ ...s, dependsOn: [...new Set(s.dependsOn.filter((d) => known.has(d) && d !== s.id))] }));
  const byId = new Map(steps.map((s, i) => [s.id, { s, i }]));
  const waiting = new Map(steps.map((s) => [s.id, s.dependsOn.length]));
  const dependents = new Map<string, string[]>();
  for (const s of steps) {
    for (const d of s.dependsOn) {
      const list = dependents.get(d);
      if (list) list.push(s.id);
      else dependents.set(d, [s.id]);
    }
  }
  // Ready steps by rank, smallest first: a binary heap (a plan from empty has tens of thousands
  // ready at once; a sorted list would move them all for each one added).
  const rank = (id: string) => {
    const { s, i } = byId.get(id)!;
    return (s.action === 'delete' ? steps.length : 0) + i;
  };
  const heap = new MinHeap();
  const push = (id: string) => heap.push(rank(id));
  for (const s of steps) if (s.dependsOn.length === 0) push(s.id);
  const out: Step[] = [];
  while (heap.size) {
    const r = heap.pop()!;
    const s = steps[r >= steps.length ? r - steps.length : r];
    out.push(s);
    for (const next of dependents.get(s.id) ?? []) {
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
