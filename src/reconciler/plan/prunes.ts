import { summarize } from './scope.js';
import { DEFAULT_THRESHOLD, safetyBlocks, type Threshold } from './safety.js';
import type { LiveView } from './live-view.js';
import type { Identities } from './state.js';
import type { Plan, Step } from './types.js';

/**
 * Steps that delete objects the manifests no longer mention (prunes), and everything waiting on
 * them. Deletes of replaced objects and of duplicates an interrupted apply left behind are kept:
 * their identity is still in the manifests. `dropped`: the deletions left out; `waiting`: the
 * identities of objects the manifests still declare whose steps wait for one, left out with them.
 */
export function withoutPrunes(plan: Plan, identities: Identities, live: LiveView, threshold: Threshold = DEFAULT_THRESHOLD): { plan: Plan; dropped: number; waiting: string[] } {
  const isPrune = (s: Step) => s.action === 'delete' && !identities.has(s.object.identity);
  const drop = new Set(plan.steps.filter(isPrune).map((s) => s.id));
  if (!drop.size) return { plan, dropped: 0, waiting: [] };
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of plan.steps) if (!drop.has(s.id) && s.dependsOn.some((d) => drop.has(d))) { drop.add(s.id); grew = true; }
  }
  const steps = plan.steps.filter((s) => !drop.has(s.id));
  const prunes = plan.steps.filter(isPrune).length;
  // Steps of objects the manifests still declare that wait for a held-back deletion (a route taking
  // the match of one deleted): not applied either, and named, never passed over as "no changes".
  const waiting = [...new Set(plan.steps.filter((s) => drop.has(s.id) && !isPrune(s)).map((s) => s.object.identity))];
  const blocked = safetyBlocks(steps, live, threshold);
  const protectedChanges = plan.protectedChanges?.filter((c) => !drop.has(c.step));
  const rest: Plan = { ...plan };
  delete rest.protectedChanges;
  return { plan: { ...rest, steps, summary: summarize(steps), blocked, ...(protectedChanges?.length ? { protectedChanges } : {}) }, dropped: prunes, waiting };
}
