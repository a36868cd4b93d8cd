import { refValues } from '../manifests/validate.js';
import type { DesiredObject, ObservedObject } from '../plan/state.js';
import { isRefToken } from '../plan/tokens.js';

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
 * every live object at each run (a scan, no comparing): this stack's objects the manifests no
 * longer declare (deletes), duplicates of one identity, and every object this stack does not own
 * (collisions, children of ours). Objects that refer to something the plan may delete come along
 * as context, so a delete still in use is refused as a full plan refuses it.
 */
export interface Subset {
  /** Identities planned (the diff's `only`). */
  planned: Set<string>;
  desired: DesiredObject[];
  observed: ObservedObject[];
}

/** Reference indexes kept between runs, updated per desired object that changed. */
export class RefIndex {
  /** Identity → identities of the desired objects that refer to it by name. */
  private readonly referrers = new Map<string, Set<string>>();
  /** Parent identity → its children's identities. */
  private readonly children = new Map<string, Set<string>>();
  private static readonly refsOf = new WeakMap<DesiredObject, string[]>();

  /** Names a desired object refers to (its body's reference tokens), found once per object. */
  static refs(d: DesiredObject): string[] {
    let out = RefIndex.refsOf.get(d);
    if (!out) {
      const found: string[] = [];
      const visit = (v: unknown) => {
        if (isRefToken(v)) found.push(v.$ref);
        else if (Array.isArray(v)) for (const x of v) visit(x);
        else if (v && typeof v === 'object') for (const k in v) visit((v as Record<string, unknown>)[k]);
      };
      visit(d.body);
      RefIndex.refsOf.set(d, (out = found));
    }
    return out;
  }

  add(d: DesiredObject): void {
    for (const target of RefIndex.refs(d)) setOf(this.referrers, target).add(d.identity);
    if (d.parentIdentity) setOf(this.children, d.parentIdentity).add(d.identity);
  }

  remove(d: DesiredObject): void {
    for (const target of RefIndex.refs(d)) this.referrers.get(target)?.delete(d.identity);
    if (d.parentIdentity) this.children.get(d.parentIdentity)?.delete(d.identity);
  }

  referrersOf(identity: string): Iterable<string> {
    return this.referrers.get(identity) ?? [];
  }

  childrenOf(identity: string): Iterable<string> {
    return this.children.get(identity) ?? [];
  }

  clear(): void {
    this.referrers.clear();
    this.children.clear();
  }
}

function setOf(m: Map<string, Set<string>>, k: string): Set<string> {
  let s = m.get(k);
  if (!s) m.set(k, (s = new Set()));
  return s;
}

/** Ids a live object refers to, found once per object (live objects not read again are the same objects run after run). */
const observedRefs = new WeakMap<ObservedObject, string[]>();
function refsOfObserved(o: ObservedObject): string[] {
  let out = observedRefs.get(o);
  if (!out) observedRefs.set(o, (out = refValues(o).map((r) => r.value)));
  return out;
}

export function planSubset(
  desired: DesiredObject[],
  byIdentity: Map<string, DesiredObject>,
  observed: ObservedObject[],
  affected: Iterable<string>,
  index: RefIndex,
): Subset {
  const planned = new Set<string>();
  const context = new Set<string>();
  for (const id of affected) planned.add(id);
  const queue = [...planned];
  for (let i = 0; i < queue.length; i++) {
    for (const c of index.childrenOf(queue[i])) if (!planned.has(c)) { planned.add(c); queue.push(c); }
  }
  for (const id of [...planned]) for (const r of index.referrersOf(id)) planned.add(r);

  // The live side, scanned once: this stack's objects by identity (duplicates noted), what the
  // manifests no longer declare, and what this stack does not own.
  const byId = new Map<string, ObservedObject>();
  const seen = new Set<string>();
  const gone: ObservedObject[] = [];
  const foreign: ObservedObject[] = [];
  for (const o of observed) {
    byId.set(o.id, o);
    if (o.owner.type !== 'this' || !o.marker) {
      foreign.push(o);
      continue;
    }
    const identity = o.marker.id;
    if (seen.has(identity)) planned.add(identity); // a duplicate: the plan deletes all but one
    else seen.add(identity);
    if (!byIdentity.has(identity)) gone.push(o);
  }
  const ours = (o: ObservedObject | undefined) => (o && o.owner.type === 'this' && o.marker ? o.marker.id : undefined);
  // Children of ours that we do not own: the plan warns about them, and never deletes their parent.
  // Children gone from the manifests are deleted one by one only while their parent is kept.
  for (const o of [...foreign, ...gone]) {
    const parent = o.parentId ? ours(byId.get(o.parentId)) : undefined;
    if (parent) context.add(parent);
  }
  // What the plan may delete (gone, or replaced: an immutable field changed) is refused while
  // something still refers to it: every live referrer is looked at, as in a full plan.
  const mayGo = new Set(gone.map((o) => o.id));
  for (const o of observed) if (ours(o) !== undefined && planned.has(o.marker!.id) && o.kind.immutable?.length) mayGo.add(o.id);
  const liveReferrers: ObservedObject[] = [];
  if (mayGo.size) {
    for (const o of observed) if (refsOfObserved(o).some((id) => mayGo.has(id))) liveReferrers.push(o);
  }
  for (const o of liveReferrers) {
    const id = ours(o);
    if (id) context.add(id);
  }

  // References of what is planned, on both sides, and parents: matched so ids read as identities.
  for (const id of planned) {
    const d = byIdentity.get(id);
    if (d) for (const target of RefIndex.refs(d)) context.add(target);
  }
  for (const o of observed) {
    const id = ours(o);
    if (id === undefined || !planned.has(id)) continue;
    for (const ref of refsOfObserved(o)) {
      const target = ours(byId.get(ref));
      if (target) context.add(target);
    }
  }
  for (const id of [...planned, ...context]) {
    for (let p = byIdentity.get(id)?.parentIdentity; p !== undefined; p = byIdentity.get(p)?.parentIdentity) context.add(p);
  }

  const wanted = (id: string) => planned.has(id) || context.has(id);
  const extra = new Set<ObservedObject>([...gone, ...foreign, ...liveReferrers]);
  return {
    planned,
    desired: desired.filter((d) => wanted(d.identity)),
    observed: observed.filter((o) => extra.has(o) || (o.owner.type === 'this' && o.marker !== undefined && wanted(o.marker.id))),
  };
}
