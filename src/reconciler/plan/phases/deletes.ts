import { refValues } from '../../manifests/object-values.js';
import type { ObservedObject } from '../state.js';
import type { ProtectedChange, Step } from '../types.js';
import type { PlanContext } from './context.js';
import { identifyingKeys } from './keys.js';
import type { Match, Matched } from './match.js';
import { materialize, parentIdentities } from './refs.js';
import { objectPath } from '../../../contract/paths.js';
import type { PendingDelete, Planned } from './steps.js';
import { orderByUniqueValues } from './unique-order.js';

/** The deletes phase's value: the whole plan's steps, unordered. */
export interface Deleted {
  /** The objects' steps (waiting, where they take a unique value, for the step that frees it), the deletes, then the releases. */
  readonly steps: readonly Step[];
  readonly warnings: readonly string[];
  /** Deletes of protected objects (allowed by `--allow-protected-changes`), each with the step that takes it. */
  readonly protectedChanges: readonly ProtectedChange[];
}

/**
 * The deletes: the old objects replaces retired, then this stack's objects the manifests no longer
 * have (prunes) and duplicates of those they have, except what is protected or holds objects
 * this stack does not own. Each delete waits for the steps that drop references to its object;
 * one something still needs is left out. Then unique values that move between objects order the
 * steps (`orderByUniqueValues`).
 */
export function planDeletes(ctx: PlanContext, matched: Matched, planned: Planned): Deleted {
  const pruned = prunes(ctx, matched, planned);
  const resolved = resolveDeletes(ctx, matched, planned, [...planned.retired, ...pruned.pending]);
  const steps = orderByUniqueValues(ctx, matched, planned, [...planned.steps, ...resolved.steps]);
  const made = new Set(resolved.steps.map((s) => s.id));
  return {
    steps,
    warnings: [...pruned.warnings, ...resolved.warnings],
    protectedChanges: pruned.protectedChanges.filter((c) => made.has(c.step)), // a delete refused (still used) has no step
  };
}

/** Objects to delete, and the warnings and protected objects that come with choosing them. */
interface Prunes { pending: PendingDelete[]; warnings: string[]; protectedChanges: ProtectedChange[] }

/** This stack's objects that no manifest object took: deleted, or kept with a warning saying why. */
function prunes(ctx: PlanContext, matched: Matched, planned: Planned): Prunes {
  const out: Prunes = { pending: [], warnings: [], protectedChanges: [] };
  const { observed, protection } = ctx;
  // Kept: the live objects some manifest object took (or replaces), and parents kept for their children.
  const keptParents = new Set<string>();
  const kept = (o: ObservedObject) => matched.claimed.has(o) || keptParents.has(o.id);
  const keptId = (id: string) => matched.claimed.hasId(id) || keptParents.has(id);
  // Protected children that left the manifests, by parent: deleting the parent would delete them.
  const protectedChildren = new Map<string, string[]>();
  // Children this stack does not own (another stack's, or none's): deleting their parent would delete them.
  const foreignChildren = new Map<string, string[]>();
  for (const o of observed) {
    if (!o.parentId) continue;
    if (o.owner.type !== 'this') {
      if (matched.claimed.has(o)) continue;
      const what = o.owner.type === 'stack' ? `${o.marker!.id} of stack "${o.owner.stack}"` : `${o.kind.title} ${o.id} (no stack manages it)`;
      foreignChildren.set(o.parentId, [...(foreignChildren.get(o.parentId) ?? []), what]);
      continue;
    }
    if (kept(o) || !protection.keeps(o.marker!.id, o.marker)) continue;
    protectedChildren.set(o.parentId, [...(protectedChildren.get(o.parentId) ?? []), o.marker!.id]);
  }
  const ids = new Set(planned.retired.map((p) => p.id));
  const hint = renameHints(ctx, matched);
  const going = protectedGoing(ctx);
  /** Ids already decided on here: an object a list gave twice (one id, two copies) is one object. */
  const seen = new Set<string>();
  for (const o of observed) {
    if (o.owner.type !== 'this' || kept(o)) continue;
    // Children go with their parent; only children of kept parents are deleted one by one.
    if (o.parentId && !keptId(o.parentId)) continue;
    if (seen.has(o.id)) continue;
    seen.add(o.id);
    const identity = o.marker!.id;
    const dup = matched.matches.get(identity)?.o;
    if (!dup && protection.keeps(identity, o.marker)) {
      out.warnings.push(ctx.opts.destroy
        ? `${identity} (${o.id}) is protected: kept (--allow-protected-changes deletes it)`
        : `${identity} (${o.id}) is no longer in the manifests but is protected: kept`);
      out.warnings.push(...hint(o, identity, 'kept (protected)'));
      continue; // with its children: a protected edge is kept as it is, routes and all
    }
    const foreign = foreignChildren.get(o.id);
    if (foreign) {
      // This stack deletes only what it owns: the parent stays, with what it holds of others.
      out.warnings.push(`${identity} (${o.id}) is ${dup ? 'a duplicate' : 'no longer in the manifests'} but is kept: deleting it would delete ${foreign.join(', ')}, which this stack does not own (delete or move ${foreign.length === 1 ? 'it' : 'them'} first)`);
      keptParents.add(o.id);
      continue;
    }
    const guarded = dup ? undefined : protectedChildren.get(o.id);
    if (guarded) {
      // Kept as it is, so the protected ones keep their parent; its other children are pruned one by one.
      out.warnings.push(`${identity} (${o.id}) is no longer in the manifests but is kept: deleting it would delete ${guarded.join(', ')}, which ${guarded.length === 1 ? 'is' : 'are'} protected (remove protect there to let it go)`);
      keptParents.add(o.id);
      continue;
    }
    const reason = dup ? `duplicate of ${identity} (${dup.id}), left by an interrupted apply or two applies at once`
      : ctx.opts.destroy ? 'the stack is destroyed' : 'no longer in the manifests (prune)';
    // Copies of one identity pruned together (duplicates of an object that left the manifests): a step each.
    let id = `${identity}:delete${dup ? ':' + o.id : ''}`;
    if (ids.has(id)) id = `${id}:${o.id}`;
    ids.add(id);
    out.pending.push({ o, identity, id, reason });
    if (dup) continue;
    out.warnings.push(...hint(o, identity, 'deleted'));
    if (protection.allow) out.protectedChanges.push(...going(o, identity, id));
  }
  return out;
}

/**
 * An object deleted (or kept only because it is protected) while a new one of the same kind,
 * under the same parent, takes its hostport, route match or certificate looks like a rename: the
 * hint says how to keep the object instead (`renamed_from`). The objects created are indexed on
 * first use.
 */
function renameHints(ctx: PlanContext, matched: Matched): (o: ObservedObject, identity: string, fate: string) => string[] {
  let created: Map<string, Match> | undefined;
  return (o, identity, fate) => {
    if (!created) {
      // The objects this plan creates, by kind, parent and each value only one object may hold.
      created = new Map();
      for (const dec of matched.matches.values()) {
        const d = dec.d;
        if (dec.o || dec.conflicted) continue;
        const parentId = d.parentIdentity ? matched.matches.get(d.parentIdentity)?.o?.id : undefined;
        if (d.parentIdentity && !parentId) continue; // inside a new parent: its parent's hint says it
        for (const k of identifyingKeys(ctx, d.kind, d.body)) created.set(`${d.kind.name}\0${parentId ?? ''}\0${k}`, dec);
      }
    }
    for (const k of identifyingKeys(ctx, o.kind, o.body)) {
      const d = created.get(`${o.kind.name}\0${o.parentId ?? ''}\0${k}`)?.d;
      if (!d) continue;
      const oldName = identity.slice(identity.lastIndexOf('/') + 1);
      // A unique value's scope, or a collision key's field (`ca_pem`): the kind says what it is.
      const key = k.slice(0, k.indexOf('='));
      const what = o.kind.uniques?.find((u) => u.scope === key)?.what ?? key;
      return [`${identity} is ${fate} and ${d.identity} created with the same ${what}: if it was renamed, write "renamed_from: ${oldName}" in ${d.identity} to keep the object (${fate === 'deleted' ? 'no delete and create' : 'not a second one beside it'})`];
    }
    return [];
  };
}

/** The protected objects a delete takes (allowed by the flag): the object, and its children going with it. Children are indexed on first use. */
function protectedGoing(ctx: PlanContext): (o: ObservedObject, identity: string, step: string) => ProtectedChange[] {
  let childrenOf: Map<string, ObservedObject[]> | undefined;
  return (o, identity, step) => {
    const out: ProtectedChange[] = [];
    if (ctx.protection.covers(identity, o.marker)) out.push({ step, identity, id: o.id, action: 'delete' });
    childrenOf ??= ownedChildren(ctx.observed);
    for (const c of childrenOf.get(o.id) ?? []) {
      if (ctx.protection.covers(c.marker!.id, c.marker)) out.push({ step, identity: c.marker!.id, id: c.id, action: 'delete' });
    }
    return out;
  };
}

/**
 * Each DELETE waits for every step that drops a reference to its object (referrers updated or
 * deleted, children deleted with their parent). A delete something still needs is left out with a
 * warning, and that may leave others out in turn: repeat until nothing changes.
 */
function resolveDeletes(ctx: PlanContext, matched: Matched, planned: Planned, all: readonly PendingDelete[]): { steps: Step[]; warnings: string[] } {
  if (!all.length) return { steps: [], warnings: [] };
  let pending = all;
  // Who refers to whom, and which manifest object holds an observed object: computed once, not per delete.
  const referrers = new Map<string, ObservedObject[]>();
  for (const r of ctx.observed) {
    for (const target of new Set(refValues({ kind: r.kind, body: r.body }).map((x) => x.value))) referrers.set(target, [...(referrers.get(target) ?? []), r]);
  }
  const refusals = new Map<string, string>();
  const steps: Step[] = [];
  for (;;) {
    const deleting = new Map(pending.map((p) => [p.o.id, p.id]));
    const goneWith = (id: string, parentId?: string) => deleting.get(id) ?? (parentId ? deleting.get(parentId) : undefined);
    const blocked = new Map<string, string[]>();
    const deps = new Map<string, string[]>();
    for (const p of pending) {
      const need: string[] = [];
      for (const r of referrers.get(p.o.id) ?? []) {
        if (r.id === p.o.id) continue;
        const gone = goneWith(r.id, r.parentId);
        const identity = matched.kept.get(r.id);
        const theirs = identity === undefined ? undefined : planned.stepsOf.get(identity);
        if (gone) need.push(gone);
        else if (theirs && !stillReferences(matched, matched.matches.get(identity!)!, p.o.id)) need.push(...theirs);
        else blocked.set(p.id, [...(blocked.get(p.id) ?? []), r.marker ? `${r.marker.id} (${r.id})` : `${r.kind.title} ${r.id}`]);
      }
      deps.set(p.id, need);
    }
    if (!blocked.size) {
      const parentOf = parentIdentities(ctx.observed);
      const childrenOf = ownedChildren(ctx.observed);
      for (const p of pending) steps.push(deleteStep(p, deps.get(p.id)!, parentOf, childrenOf.get(p.o.id)));
      break;
    }
    for (const [id, users] of blocked) refusals.set(id, users.join(', '));
    pending = pending.filter((p) => !blocked.has(p.id));
  }
  const warnings: string[] = [];
  for (const p of all) {
    const users = refusals.get(p.id);
    if (users) warnings.push(`${p.identity} (${p.o.id}) is not deleted: still used by ${users}`);
  }
  return { steps, warnings };
}

function deleteStep(p: PendingDelete, deps: string[], parentOf: (id: string) => string, children: ObservedObject[] | undefined): Step {
  const { o } = p;
  return {
    id: p.id, action: 'delete',
    object: { kind: o.kind.name, identity: p.identity, name: p.identity.split('/').pop()!, id: o.id, ...(o.parentId ? { parent: parentOf(o.parentId) } : {}) },
    request: { method: 'DELETE', path: objectPath(o.kind, o.id, o.parentId ?? null) },
    changes: [], dependsOn: deps, reason: p.reason,
    ...(children?.length ? { cascade: children.map((c) => ({ kind: c.kind.name, identity: c.marker!.id, name: c.marker!.id.split('/').pop()!, id: c.id, parent: p.identity })) } : {}),
  };
}

/**
 * This stack's children of each live object, by parent id: what a delete of the parent takes with
 * it. (A parent holding others' children is never deleted: `prunes` keeps it.)
 */
function ownedChildren(observed: readonly ObservedObject[]): Map<string, ObservedObject[]> {
  const out = new Map<string, ObservedObject[]>();
  for (const c of observed) {
    if (c.parentId === undefined || c.owner.type !== 'this' || !c.marker) continue;
    let list = out.get(c.parentId);
    if (!list) out.set(c.parentId, (list = []));
    list.push(c);
  }
  return out;
}

/** Whether a manifest object's request body still names `id` (its update does not drop the reference). */
function stillReferences(matched: Matched, dec: Match, id: string): boolean {
  return JSON.stringify(materialize(matched, dec.d.body)).includes(`"${id}"`);
}
