import { kindByName } from '../../kinds/registry.js';
import { NormMemo } from './normalize.js';
import { orderSteps } from './order.js';
import { checks } from './phases/checks.js';
import { planContext, type DiffOptions, type PlanContext } from './phases/context.js';
import { planDeletes, type Deleted } from './phases/deletes.js';
import { match, type Matched } from './phases/match.js';
import { planSteps, type Planned } from './phases/steps.js';
import { DEFAULT_THRESHOLD, safetyBlocks } from './safety.js';
import { scopePlan } from './scope.js';
import type { DesiredObject, ObservedObject } from './state.js';
import { PLAN_FORMAT_VERSION, type Plan, type PlanSummary, type Step } from './types.js';

export type { DiffOptions } from './phases/context.js';

/**
 * The plan that takes `observed` to `desired`: a pure function (no I/O, clock or randomness), so
 * the same inputs give the same plan, byte for byte. Four phases, each a function of the ones
 * before (`phases/`): match the manifests' objects to live ones, plan each object's steps, plan
 * the deletes (and order unique values that move), check what apply would refuse.
 */
export function diff(desired: DesiredObject[], observed: ObservedObject[], opts: DiffOptions, memo: NormMemo = new NormMemo('plan')): Plan {
  const ctx = planContext(desired, observed, opts, memo);
  const matched = match(ctx);
  const planned = planSteps(ctx, matched);
  const deleted = planDeletes(ctx, matched, planned);
  const warnings = [...planned.warnings, ...checks(ctx, matched, planned), ...deleted.warnings];
  for (const identity of planned.settled) opts.settled?.add(identity);
  let plan = assemble(ctx, matched, planned, deleted, warnings);
  // Destroying is the stack's whole point here: the share of objects deleted is not a surprise to stop.
  if (opts.destroy) plan = { ...plan, blocked: [], destroy: true };
  if (opts.targets?.length) plan = scopePlan(plan, opts.targets, desired, observed, ctx.live, opts.destroy ? undefined : opts.threshold ?? DEFAULT_THRESHOLD);
  return plan;
}

/** The phases' values as a plan: steps in dependency order, what apply checks the live objects by, the summary and the safety blocks. */
function assemble(ctx: PlanContext, matched: Matched, planned: Planned, deleted: Deleted, warnings: string[]): Plan {
  const steps = orderSteps(deleted.steps);
  const touched = new Set<string>();
  for (const s of steps) if (s.object.id) touched.add(s.object.id);
  const observed: Record<string, string> = {};
  for (const o of ctx.observed.filter((x) => touched.has(x.id)).sort((a, b) => a.id.localeCompare(b.id))) observed[o.id] = o.fingerprint;
  const protectedChanges = [...planned.protectedChanges, ...deleted.protectedChanges];
  const versions = conditionalVersions(steps, ctx.observed, touched);
  return {
    formatVersion: PLAN_FORMAT_VERSION,
    stack: ctx.opts.stack,
    target: ctx.opts.target,
    observed,
    ...(Object.keys(versions).length ? { versions } : {}),
    steps,
    summary: summary(matched, planned, steps),
    warnings,
    conflicts: [...matched.conflicts],
    blocked: safetyBlocks(steps, ctx.live, ctx.opts.threshold ?? DEFAULT_THRESHOLD),
    ...(protectedChanges.length ? { protectedChanges } : {}),
  };
}

/** Objects created, updated and replaced (each once, whatever its steps), and deletes other than of replaced objects. */
function summary(matched: Matched, planned: Planned, steps: Step[]): PlanSummary {
  const s = { create: 0, update: 0, replace: 0, delete: 0 };
  for (const identity of planned.stepsOf.keys()) {
    const dec = matched.matches.get(identity)!;
    if (!dec.o) s.create++;
    else if (dec.replaced) s.replace++;
    else s.update++;
  }
  s.delete = steps.filter((x) => x.action === 'delete' && !x.id.endsWith(':delete-replaced')).length;
  return s;
}

/**
 * The ETags apply sends as `If-Match`, by object id: each touched object the plan read a version
 * of, except a parent whose children the plan also writes (a route's write raises its edge's
 * version: the edge's own step would find it changed by the plan itself).
 */
function conditionalVersions(steps: Step[], observed: readonly ObservedObject[], touched: Set<string>): Record<string, string> {
  const parents = new Set<string>();
  for (const s of steps) {
    const kind = kindByName(s.object.kind);
    if (!kind.parent) continue;
    const at = kind.path.split('/').indexOf(`:${kind.parent.param}`);
    const id = s.request.path.split('/')[at];
    if (id) parents.add(id);
  }
  const out: Record<string, string> = {};
  for (const o of observed) if (o.etag && touched.has(o.id) && !parents.has(o.id)) out[o.id] = o.etag;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
