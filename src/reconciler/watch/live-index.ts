import type { Body, KindDef } from '../../kinds/types.js';
import { refValues } from '../manifests/object-values.js';
import type { LiveView } from '../plan/live-view.js';
import { observeItem, type ObservedLists } from '../plan/observed.js';
import type { Identities, ObservedObject } from '../plan/state.js';
import { listedKinds } from '../state/read-state.js';

/** One top-level object as read: its response, what the planner makes of it (it, then its children), and its place in its list. */
interface Entry { resp: Body; objs: ObservedObject[]; seq: number }

const NO_OBJECTS: readonly ObservedObject[] = Object.freeze([]) as readonly ObservedObject[];

/**
 * The live state a watch session keeps between runs: every response of the last full read, with
 * those read again by id since put in their place, and the indexes a plan over part of the
 * objects reads instead of looking at every object — by id, this stack's objects by identity (and
 * by kind), those of identities the manifests no longer declare, identities with more than one
 * live copy, the objects this stack does not own, and (made when first asked for) what refers to
 * each id. Each index is updated per response put, never rebuilt between full reads.
 */
export class LiveIndex implements LiveView {
  /** Per listed kind: responses by id in list order (one read again keeps its place, a new one goes last). */
  private readonly lists = new Map<KindDef, Map<string, Entry>>();
  private seq = 0;
  /** Where each object sits in a list of every object (`all()`): kind, list place, then child index. */
  private readonly order = new WeakMap<ObservedObject, number>();
  private readonly byId = new Map<string, ObservedObject>();
  /** This stack's objects by marker identity; and by kind, then identity (the safety threshold's counts). */
  private readonly owned = new Map<string, ObservedObject[]>();
  private readonly ownedByKind = new Map<string, Map<string, ObservedObject[]>>();
  /** Identities this stack's live objects carry that the manifests do not declare (prunes). */
  readonly gone = new Set<string>();
  /** Identities more than one live object carries (an interrupted apply's duplicates). */
  readonly duplicated = new Set<string>();
  /** Objects this stack does not own (another stack's, or none's). */
  readonly foreign = new Set<ObservedObject>();
  /** Live objects by the ids they refer to: made on first use, then kept up to date. */
  private referrers: Map<string, Set<ObservedObject>> | undefined;
  private every: ObservedObject[] | undefined;
  loaded = false;

  /** `declared`: the manifests' identities, read when an object comes or goes (`redeclared` when they change). */
  constructor(private readonly stack: string, private readonly declared: Identities) {}

  /** Every list page as read: replaces all that was kept. */
  load(lists: ObservedLists): void {
    this.lists.clear();
    this.byId.clear();
    this.owned.clear();
    this.ownedByKind.clear();
    this.gone.clear();
    this.duplicated.clear();
    this.foreign.clear();
    this.referrers = undefined;
    this.every = undefined;
    for (const kind of listedKinds()) {
      const entries = new Map<string, Entry>();
      this.lists.set(kind, entries);
      for (const resp of lists[kind.listKey!] ?? []) this.addEntry(kind, entries, resp);
    }
    this.loaded = true;
  }

  /** A top-level object read again by id (`undefined`: it is gone). */
  put(kind: KindDef, id: string, resp: Body | undefined): void {
    const entries = this.lists.get(kind)!;
    const had = entries.get(id);
    if (had) for (const o of had.objs) this.unindex(o);
    this.every = undefined;
    if (!resp) {
      entries.delete(id);
      return;
    }
    this.addEntry(kind, entries, resp, had?.seq);
  }

  private addEntry(kind: KindDef, entries: Map<string, Entry>, resp: Body, seq = this.seq++): void {
    const objs = observeItem(kind, resp, this.stack);
    entries.set(resp.id as string, { resp, objs, seq });
    const base = (listedKinds().indexOf(kind) * 2 ** 30 + seq) * 2 ** 20;
    for (let i = 0; i < objs.length; i++) {
      this.order.set(objs[i], base + i);
      this.index(objs[i]);
    }
  }

  private index(o: ObservedObject): void {
    this.byId.set(o.id, o);
    if (this.referrers) for (const id of refsOf(o)) setOf(this.referrers, id).add(o);
    if (o.owner.type !== 'this' || !o.marker) {
      this.foreign.add(o);
      return;
    }
    const identity = o.marker.id;
    const copies = this.owned.get(identity);
    if (copies) {
      copies.push(o);
      this.duplicated.add(identity);
    } else this.owned.set(identity, [o]);
    let ofKind = this.ownedByKind.get(o.kind.name);
    if (!ofKind) this.ownedByKind.set(o.kind.name, (ofKind = new Map()));
    const same = ofKind.get(identity);
    if (same) same.push(o);
    else ofKind.set(identity, [o]);
    if (!this.declared.has(identity)) this.gone.add(identity);
  }

  private unindex(o: ObservedObject): void {
    this.byId.delete(o.id);
    if (this.referrers) for (const id of refsOf(o)) this.referrers.get(id)?.delete(o);
    if (o.owner.type !== 'this' || !o.marker) {
      this.foreign.delete(o);
      return;
    }
    const identity = o.marker.id;
    const left = without(this.owned, identity, o);
    if (left < 2) this.duplicated.delete(identity);
    if (!left) this.gone.delete(identity);
    const ofKind = this.ownedByKind.get(o.kind.name);
    if (ofKind) without(ofKind, identity, o);
  }

  /** The manifests now declare these identities, or no longer do: which live objects are prunes follows. */
  redeclared(identities: Iterable<string>): void {
    for (const identity of identities) {
      if (this.owned.has(identity) && !this.declared.has(identity)) this.gone.add(identity);
      else this.gone.delete(identity);
    }
  }

  /** Every object, in list order, children after their parent (a full plan's input). */
  all(): ObservedObject[] {
    if (this.every) return this.every;
    const out: ObservedObject[] = [];
    for (const entries of this.lists.values()) for (const e of entries.values()) for (const o of e.objs) out.push(o);
    return (this.every = out);
  }

  /** Objects in the order `all()` lists them. */
  sorted(objs: Iterable<ObservedObject>): ObservedObject[] {
    return [...objs].sort((a, b) => this.order.get(a)! - this.order.get(b)!);
  }

  /** Top-level objects listed of a kind. */
  count(kind: KindDef): number {
    return this.lists.get(kind)?.size ?? 0;
  }

  /** This stack's live objects that carry an identity. */
  copies(identity: string): readonly ObservedObject[] {
    return this.owned.get(identity) ?? NO_OBJECTS;
  }

  /** Live objects that refer to an id. */
  referrersOf(id: string): Iterable<ObservedObject> {
    if (!this.referrers) {
      this.referrers = new Map();
      for (const o of this.byId.values()) for (const ref of refsOf(o)) setOf(this.referrers, ref).add(o);
    }
    return this.referrers.get(id) ?? NO_OBJECTS;
  }

  get(id: string): ObservedObject | undefined {
    return this.byId.get(id);
  }

  ownedOf(kind: string): ReadonlyMap<string, readonly ObservedObject[]> {
    return this.ownedByKind.get(kind) ?? NO_OWNED;
  }

  referenced(id: string): boolean {
    for (const o of this.referrersOf(id)) if (o.id !== id) return true;
    // A parent with children counts, as in `referencedIds`: its entry lists it, then them.
    const o = this.byId.get(id);
    return !!o && (this.lists.get(o.kind)?.get(id)?.objs.length ?? 0) > 1;
  }
}

const NO_OWNED: ReadonlyMap<string, readonly ObservedObject[]> = new Map();

/** Ids a live object refers to, found once per object (objects not read again are the same run after run). */
const refsCache = new WeakMap<ObservedObject, string[]>();
export function refsOf(o: ObservedObject): string[] {
  let out = refsCache.get(o);
  if (!out) refsCache.set(o, (out = refValues(o).map((r) => r.value)));
  return out;
}

function setOf<K, V>(m: Map<K, Set<V>>, k: K): Set<V> {
  let s = m.get(k);
  if (!s) m.set(k, (s = new Set()));
  return s;
}

/** Takes `o` out of the list at `key`, dropping the entry once empty; how many are left. */
function without(m: Map<string, ObservedObject[]>, key: string, o: ObservedObject): number {
  const list = m.get(key);
  if (!list) return 0;
  const at = list.indexOf(o);
  if (at >= 0) list.splice(at, 1);
  if (!list.length) m.delete(key);
  return list.length;
}
