import { BODY_LIMIT } from '../../../contract/limits.js';
import { formatPath } from '../../manifests/problems.js';
import { namedTarget } from '../../manifests/schema.js';
import { refValues } from '../../manifests/object-values.js';
import type { PlanContext } from './context.js';
import type { Matched } from './match.js';
import type { Planned } from './steps.js';

/**
 * What the plan can tell ahead of apply about the objects' steps, and what it leaves alone: each a
 * warning, in this order. They add no step and change none.
 */
export function checks(ctx: PlanContext, matched: Matched, planned: Planned): string[] {
  return [...missingRawRefs(ctx, matched, planned), ...foreignChildren(ctx, matched), ...oversizedRequests(planned)];
}

/**
 * Raw ids (not names) in objects this plan writes that name a kind the plan has read every object
 * of, where no such object exists: the step would fail with 400 at apply. Said now, as a warning
 * (another stack's apply may still create it). Objects the plan leaves alone are not looked at: the
 * service accepted their references, and a referenced object cannot be deleted.
 */
export function missingRawRefs(ctx: PlanContext, matched: Matched, planned: Planned): string[] {
  const out: string[] = [];
  if (!planned.stepsOf.size) return out; // nothing written
  for (const dec of matched.matches.values()) {
    if (!planned.stepsOf.has(dec.d.identity)) continue;
    for (const r of refValues(dec.d)) {
      const target = namedTarget(r.def);
      if (!target || !r.value.startsWith(`${r.def.onlyPrefix ?? target.idPrefix}_`)) continue;
      if (ctx.live.get(r.value)) continue;
      out.push(`${dec.d.identity}: ${formatPath(r.path)} names ${target.title} ${r.value}, which this account does not have: its step will fail (400) unless it is created first`);
    }
  }
  return out;
}

/**
 * Children of this stack's objects that the stack does not manage (a route added to a managed
 * edge through the API): the plan leaves them alone, and says so — they change what the edge
 * serves, and "No changes." alone would hide them.
 */
export function foreignChildren(ctx: PlanContext, matched: Matched): string[] {
  const out: string[] = [];
  for (const o of ctx.observed) {
    if (!o.parentId || o.owner.type === 'this' || matched.claimed.has(o)) continue;
    const parent = matched.kept.get(o.parentId);
    if (!parent) continue;
    out.push(o.owner.type === 'stack'
      ? `${parent} holds ${o.kind.title} ${o.id}, which stack "${o.owner.stack}" manages: left alone`
      : `${parent} holds ${o.kind.title} ${o.id}, which no stack manages: left alone (export --all shows it; write it into the manifests and plan with --adopt to manage it here)`);
  }
  return out;
}

/**
 * Steps whose request body is over the service's 1 MiB limit (every field within its own limit
 * can still add up: 100 headers of 4 KB, twice, and a thousand e-mail addresses): they would fail
 * with 413. Said now, as a warning. Secrets count as their references here (each is at most 4 KB).
 * Deletes carry no body, and a release carries less of an object than it has.
 */
export function oversizedRequests(planned: Planned): string[] {
  const out: string[] = [];
  for (const step of planned.steps) {
    if (step.request.body === undefined) continue;
    const bytes = Buffer.byteLength(JSON.stringify(step.request.body));
    if (bytes <= BODY_LIMIT) continue;
    out.push(`${step.id}: its request body is about ${Math.ceil(bytes / 1024)} KiB, over the service's 1 MiB limit: the step will fail (413); spread the values over fewer or smaller fields`);
  }
  return out;
}
