import type { LiveView } from './live-view.js';
import { safetyBlocks, type Threshold } from './safety.js';
import { checkSelectors, selector, selectsWithin } from './selectors.js';
import type { DesiredObject, ObservedObject } from './state.js';
import type { Plan, PlanSummary, Step } from './types.js';

/** Identities as warnings write them (`HTTPSEdge/web`, `HTTPSEdge/web/routes/api`). */
const IDENTITY = /\b[A-Z][A-Za-z]+\/[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?:\/[a-z_]+\/[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)*/g;

/**
 * The whole stack's plan cut down to what `--target` selects: the steps of the selected objects
 * (an edge's with its routes'), plus the creation of objects they refer to that do not exist yet,
 * and nothing else — no other object is updated or deleted. A selected step that waits for a step
 * outside (another object's update that frees a hostport, a referrer's update before a delete)
 * could not succeed alone: it is left out, with a warning naming the object to add.
 *
 * Cutting the finished plan, rather than planning less, keeps every ordering rule of the planner:
 * the steps kept are in the whole plan's order, and their dependencies are all kept.
 * Selectors that name no object of the manifests or of the stack's live objects are an error.
 */
export function scopePlan(plan: Plan, targets: readonly string[], desired: DesiredObject[], observed: readonly ObservedObject[], live: LiveView, threshold: Threshold | undefined): Plan {
  const selectors = targets.map(selector);
  const known = new Set<string>(desired.map((d) => d.identity));
  for (const o of observed) if (o.owner.type === 'this' && o.marker) known.add(o.marker.id);
  checkSelectors(selectors, [...known]);

  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  const byIdentity = new Map<string, Step[]>();
  for (const s of plan.steps) byIdentity.set(s.object.identity, [...(byIdentity.get(s.object.identity) ?? []), s]);
  const inScope = (identity: string) => selectsWithin(selectors, identity);

  const keep = new Set<string>();
  const queue = plan.steps.filter((s) => inScope(s.object.identity));
  for (const s of queue) keep.add(s.id);
  const created = new Set<string>();
  for (let i = 0; i < queue.length; i++) {
    for (const d of queue[i].dependsOn) {
      const dep = byId.get(d);
      if (!dep || keep.has(d) || dep.action !== 'create') continue;
      // The whole creation of the object: its create and the modules attached after it.
      created.add(dep.object.identity);
      for (const s of byIdentity.get(dep.object.identity) ?? []) {
        if (keep.has(s.id)) continue;
        keep.add(s.id);
        queue.push(s);
      }
    }
  }

  const warnings: string[] = [];
  // Steps come in dependency order: one pass leaves out every step waiting, even indirectly, for
  // one outside. The warning names the step outside that holds it (not a target's own step that
  // was left out before it): that is the object to add.
  const heldBy = new Map<string, Step>();
  let waiting = 0;
  for (const s of plan.steps) {
    if (!keep.has(s.id)) continue;
    const outside = s.dependsOn.find((d) => !keep.has(d));
    if (outside === undefined) continue;
    keep.delete(s.id);
    const root = heldBy.get(outside) ?? byId.get(outside)!;
    heldBy.set(s.id, root);
    if (inScope(s.object.identity)) waiting++;
    warnings.push(`${s.id} is left out: it waits for ${root.id}, which is outside the targets (add --target ${root.object.identity} to plan both)`);
  }
  // The creations kept for steps now left out are left out too: alone, they would be applied for nothing.
  const needed = new Set<string>();
  const visit = (id: string) => {
    if (needed.has(id) || !keep.has(id)) return;
    needed.add(id);
    for (const d of byId.get(id)!.dependsOn) visit(d);
  };
  for (const s of plan.steps) if (keep.has(s.id) && inScope(s.object.identity)) visit(s.id);
  // An object created is created whole (its modules attached after it), or not at all.
  for (const identity of created) {
    const its = byIdentity.get(identity) ?? [];
    if (its.some((s) => needed.has(s.id))) for (const s of its) if (keep.has(s.id)) visit(s.id);
  }
  for (const id of [...keep]) {
    if (needed.has(id)) continue;
    keep.delete(id);
    created.delete(byId.get(id)!.object.identity);
  }

  const steps = plan.steps.filter((s) => keep.has(s.id));
  const ids = new Set<string>();
  for (const s of steps) if (s.object.id) ids.add(s.object.id);
  const observedFp: Record<string, string> = {};
  for (const [id, fp] of Object.entries(plan.observed)) if (ids.has(id)) observedFp[id] = fp;
  const concerns = (identity: string) => inScope(identity) || created.has(identity);
  // A warning about objects outside the targets only (one whose identities are all elsewhere) is not this plan's.
  const about = (w: string) => {
    const named = w.match(IDENTITY)?.filter((x) => known.has(x)) ?? [];
    return !named.length || named.some(concerns);
  };
  const protectedChanges = plan.protectedChanges?.filter((c) => keep.has(c.step)) ?? [];
  const whole: Plan = { ...plan };
  delete whole.protectedChanges;
  return {
    ...whole,
    observed: observedFp,
    steps,
    summary: summarize(steps),
    warnings: [...plan.warnings.filter(about), ...warnings],
    conflicts: plan.conflicts.filter((c) => concerns(c.identity)),
    blocked: threshold ? safetyBlocks(steps, live, threshold) : [],
    ...(protectedChanges.length ? { protectedChanges } : {}),
    partial: { targets: selectors.map((s) => s.text), created: [...created].sort(), omitted: plan.steps.length - steps.length, ...(waiting ? { waiting } : {}) },
  };
}

/** Objects created, updated, replaced and deleted by these steps (as the planner counts them). */
export function summarize(steps: Step[]): PlanSummary {
  const s: PlanSummary = { create: 0, update: 0, replace: 0, delete: 0 };
  const made = new Set<string>();
  for (const x of steps) {
    if (x.action === 'create') s.create++;
    else if (x.action === 'replace') s.replace++;
    else continue;
    made.add(x.object.identity);
  }
  const updated = new Set<string>();
  for (const x of steps) {
    if (x.action === 'delete') {
      if (!x.id.endsWith(':delete-replaced')) s.delete++;
    } else if (!made.has(x.object.identity) && !x.id.endsWith(':release')) updated.add(x.object.identity);
  }
  s.update = updated.size;
  return s;
}
