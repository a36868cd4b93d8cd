import { kindByName } from '../../src/kinds/registry.js';
import type { Body } from '../../src/kinds/types.js';
import { decodeMetadata, encodeMetadata, MARKER_VERSION, TOOL } from '../../src/reconciler/ownership/marker.js';
import { planContext, type DiffOptions, type PlanContext } from '../../src/reconciler/plan/phases/context.js';
import { match, type Matched } from '../../src/reconciler/plan/phases/match.js';
import { planSteps, type Planned } from '../../src/reconciler/plan/phases/steps.js';
import { fingerprintObserved } from '../../src/reconciler/plan/observed.js';
import type { DesiredObject, ObservedObject } from '../../src/reconciler/plan/state.js';

/** The stack the hand-built objects of the phase tests belong to. */
export const STACK = 'prod';

/** A manifest object of kind `kind` (registry name); a child's parent is read from its identity (`HTTPSEdge/web/routes/api`). */
export function want(kind: string, identity: string, body: Body, more: Partial<DesiredObject> = {}): DesiredObject {
  const at = identity.indexOf('/routes/');
  return {
    kind: kindByName(kind), identity, name: identity.slice(identity.lastIndexOf('/') + 1), protect: false, fp: {}, body,
    ...(at > 0 ? { parentIdentity: identity.slice(0, at), embedField: 'routes' } : {}),
    ...more,
  };
}

/** A live object in request form: this stack's when it has an `identity`, another stack's with `stack`, unmanaged without either. */
export function live(kind: string, id: string, body: Body, how: { identity?: string; stack?: string; parentId?: string; protect?: boolean; user?: string; h?: string } = {}): ObservedObject {
  const stack = how.stack ?? STACK;
  const metadata = how.identity ? encodeMetadata({ tool: TOOL, v: MARKER_VERSION, stack, id: how.identity, ...(how.protect ? { protect: true } : {}), ...(how.h ? { h: how.h } : {}) }, how.user) : how.user;
  const { marker, user } = decodeMetadata(metadata);
  const o = {
    kind: kindByName(kind), id, parentId: how.parentId, body, metadata, marker, userMetadata: user,
    owner: !marker ? { type: 'unmanaged' as const } : marker.stack === STACK ? { type: 'this' as const } : { type: 'stack' as const, stack: marker.stack },
  };
  return { ...o, fingerprint: fingerprintObserved(o) };
}

/** A well-formed id of a kind's prefix, numbered. */
export function numberedId(prefix: string, n: number): string {
  return `${prefix}_${String(n).padStart(27, '0')}`;
}

export function context(desired: DesiredObject[], observed: ObservedObject[], opts: Partial<DiffOptions> = {}): PlanContext {
  return planContext(desired, observed, { stack: STACK, target: 'https://api.example.test', ...opts });
}

/** The phases up to steps, for the phases after them. */
export function upToSteps(ctx: PlanContext): { matched: Matched; planned: Planned } {
  const matched = match(ctx);
  return { matched, planned: planSteps(ctx, matched) };
}
