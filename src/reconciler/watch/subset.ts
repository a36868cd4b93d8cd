import type { DesiredObject, ObservedObject } from '../plan/state.js';
import { refsOf, type LiveIndex } from './live-index.js';
import { RefIndex, type DesiredState } from './desired-state.js';

/**
 * Which objects a watch run plans after a save, and which it only matches. A full plan compares
 * every manifest object with its live object; after a one-field save all but a few were found
 * unchanged by the last plan and neither side of them changed since. Planned here:
 *
 * - `affected`: the identities whose desired state changed, those the last plan did not find
 *   unchanged (steps, conflicts, warnings), and what an apply wrote since;
 * - the children of those (a parent replaced or created takes its children with it);
 * - the manifest objects that refer to any of them (a target replaced moves its referrers).
 *
 * Matched but not planned (context): the parents of planned objects, what planned objects refer
 * to on either side, and this stack's objects that live objects of the plan refer to. Read from
 * the live state's indexes (`LiveIndex`, kept per response read, so no run walks every object):
 * this stack's objects the manifests no longer declare (deletes), duplicates of one identity, and
 * every object this stack does not own (collisions, children of ours). Objects that refer to
 * something the plan may delete come along as context, so a delete still in use is refused as a
 * full plan refuses it.
 */
export interface Subset {
  /** Identities planned (the diff's `only`). */
  planned: Set<string>;
  desired: DesiredObject[];
  observed: ObservedObject[];
}

export function planSubset(desired: DesiredState, live: LiveIndex, affected: Iterable<string>): Subset {
  const { byIdentity, refs: index } = desired;
  const planned = new Set<string>();
  const context = new Set<string>();
  for (const id of affected) planned.add(id);
  const queue = [...planned];
  for (let i = 0; i < queue.length; i++) {
    for (const c of index.childrenOf(queue[i])) if (!planned.has(c)) { planned.add(c); queue.push(c); }
  }
  for (const id of [...planned]) for (const r of index.referrersOf(id)) planned.add(r);
  // Duplicates of one identity: the plan deletes all but one.
  for (const id of live.duplicated) planned.add(id);

  // The live side, from the live state's indexes: this stack's objects of planned identities,
  // what the manifests no longer declare, and what this stack does not own.
  // A renamed object's live object still carries an identity it had before (`renamed_from`).
  const mine: ObservedObject[] = [];
  for (const id of planned) {
    for (const o of live.copies(id)) mine.push(o);
    for (const before of byIdentity.get(id)?.previousIdentities ?? []) {
      context.add(before);
      for (const o of live.copies(before)) mine.push(o);
    }
  }
  const gone: ObservedObject[] = [];
  for (const id of live.gone) for (const o of live.copies(id)) gone.push(o);
  // Ids whose identity the plan must know: parents of what we do not own (the plan warns about
  // them, and never deletes such a parent) and of what is gone (children are deleted one by one
  // only while their parent is kept), and what the planned live objects refer to.
  const wantedIds = new Set<string>();
  for (const o of live.foreign) if (o.parentId) wantedIds.add(o.parentId);
  for (const o of gone) if (o.parentId) wantedIds.add(o.parentId);
  for (const o of mine) for (const ref of refsOf(o)) wantedIds.add(ref);
  for (const id of wantedIds) {
    const o = live.get(id);
    if (o?.owner.type === 'this' && o.marker) context.add(o.marker.id);
  }
  // What the plan may delete (gone, or replaced: an immutable field changed) is refused while
  // something still refers to it: every live referrer is looked at, as in a full plan.
  const mayGo = new Set(gone.map((o) => o.id));
  for (const o of mine) if (o.kind.immutable?.length) mayGo.add(o.id);
  const extra = new Set<ObservedObject>([...gone, ...live.foreign]);
  for (const id of mayGo) {
    for (const o of live.referrersOf(id)) {
      extra.add(o);
      if (o.owner.type === 'this' && o.marker) context.add(o.marker.id);
    }
  }

  // References of what is planned, and parents: matched so ids read as identities.
  for (const id of planned) {
    const d = byIdentity.get(id);
    if (d) for (const target of RefIndex.refs(d)) context.add(target);
  }
  for (const id of [...planned, ...context]) {
    for (let p = byIdentity.get(id)?.parentIdentity; p !== undefined; p = byIdentity.get(p)?.parentIdentity) context.add(p);
  }

  for (const id of [...planned, ...context]) for (const o of live.copies(id)) extra.add(o);
  return {
    planned,
    desired: desired.sorted(new Set([...planned, ...context])),
    observed: live.sorted(extra),
  };
}
