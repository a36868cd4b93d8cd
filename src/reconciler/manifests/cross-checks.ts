import type { UniqueDef } from '../../kinds/types.js';
import { Scratch } from '../../util/scratch.js';
import { didYouMean } from '../../util/suggest.js';
import type { SourceDoc } from './load.js';
import { positionOf, type ManifestObject, type RefValue } from './model.js';
import { isName, refsOf, uniqueValuesOf } from './object-values.js';
import { formatPath, type Problem } from './problems.js';
import { namedTarget } from './schema.js';

/** Records a problem of an object (or of a place in a document) at a path inside it. */
export type Add = (o: ManifestObject | { doc: SourceDoc; at: (string | number)[] }, path: (string | number)[], rule: string, message: string, opts?: { key?: boolean; severity?: Problem['severity'] }) => void;

export function adder(problems: { push(p: Problem): unknown }): Add {
  return (o, path, rule, message, x = {}) => {
    const full = [...o.at, ...path];
    problems.push({ ...o.doc.locate(full, { key: x.key }), severity: x.severity ?? 'error', path: formatPath(full), rule, message });
  };
}

/** One object, or those holding one name or value in manifest order (no list is made for the usual one). */
type Holders = ManifestObject | ManifestObject[];

/** What each of the per-object passes found, by the top-level object it checked (it and its children). */
type Found = Map<ManifestObject, Problem[]>;

/**
 * The passes across documents — names unique, renames, references that resolve, unique values,
 * no reference cycles — over indexes kept per object: top-level objects by kind and name, the
 * holders of each unique value, and (made on first use) every object by identity and the objects
 * by the names their references use. `validateManifests` adds every object once and asks for the
 * problems; a watch session keeps one between runs and, per file saved, removes the file's old
 * objects and adds its new ones: only the objects a change reaches are checked again (those
 * sharing a name or a value with it, those referring to a name that came or went, every rename
 * and every cycle when such objects exist). Either way `problems()` finds what the passes over
 * every object in manifest order find, in that order.
 *
 * `rankOf` orders files (the order they are read in): the first holder of a name or value is the
 * one in the earliest file, document and child, and the others are the duplicates.
 */
export class CrossChecks {
  /**
   * What the check of one object finds, emptied into a list of its own when it found something
   * (most objects: nothing, and no list is made). The checks do not nest. Per instance: two
   * validations may run in one process.
   */
  private readonly scratch = new Scratch<Problem>();
  private readonly report = adder(this.scratch);
  private readonly names = new Map<string, Map<string, Holders>>();
  /** Unique → scope (the parent, for per-parent uniques) → value → its holders (one per time it is held). */
  private readonly uniques = new Map<UniqueDef, Map<ManifestObject | undefined, Map<string, Holders>>>();
  private identities: Map<string, Holders> | undefined;
  /** Target kind → name → the top-level objects that refer to it (themselves or through a child). */
  private referrers: Map<string, Map<string, Set<ManifestObject>>> | undefined;
  /** Target kind → top-level objects with a reference to no object of that kind (their hints change with its names). */
  private readonly unresolved = new Map<string, Set<ManifestObject>>();
  private readonly renamed = new Set<ManifestObject>();
  private readonly acyclic = new Set<ManifestObject>();
  /** The kinds acyclic references name (a name of these coming or going may make or break a cycle). */
  private readonly acyclicTargets = new Set<string>();
  private readonly found = { names: new Map() as Found, refs: new Map() as Found, uniques: new Map() as Found };
  private renameProblems: Problem[] = [];
  private cycleProblems: Problem[] = [];
  /** Before the first check: every top-level object added, in order (each is checked then), and those holding a unique value another holds too. */
  private unchecked: ManifestObject[] | undefined = [];
  private readonly clashing = new Set<ManifestObject>();
  private readonly dirty = { names: new Set<ManifestObject>(), refs: new Set<ManifestObject>(), uniques: new Set<ManifestObject>() };
  private renamesDirty = false;
  private cyclesDirty = false;

  constructor(private readonly rankOf: (file: string) => number) {}

  /** Manifest order: file, document, then the object before its children in theirs. */
  private readonly compare = (a: ManifestObject, b: ManifestObject): number =>
    this.rankOf(a.doc.file) - this.rankOf(b.doc.file) || a.doc.index - b.doc.index || childIndex(a) - childIndex(b);

  /** Top-level objects (with their children) now in the manifests. */
  add(objects: readonly ManifestObject[]): void {
    for (let i = 0; i < objects.length; i++) this.index(objects[i], true);
  }

  /** Top-level objects (with their children) no longer in the manifests: the very objects added. */
  remove(objects: readonly ManifestObject[]): void {
    for (let i = 0; i < objects.length; i++) this.index(objects[i], false);
  }

  private index(o: ManifestObject, add: boolean): void {
    const tracking = !this.unchecked;
    if (!tracking) this.unchecked!.push(o);
    let byName = this.names.get(o.kind.name);
    if (!byName) this.names.set(o.kind.name, (byName = new Map()));
    const before = firstOf(byName.get(o.name));
    const after = add ? this.insert(byName, o.name, o) : removeFrom(byName, o.name, o);
    if (tracking) {
      for (const h of each(after)) this.dirty.names.add(h);
      // Another first holder (the name came, went, or its first is another): what refers to it
      // resolves now or no more, and what does not resolve has other hints.
      if (before !== firstOf(after)) this.nameChanged(o.kind.name, o.name);
    }
    this.visit(o, o, add, tracking);
    for (let i = 0; i < o.children.length; i++) this.visit(o.children[i], o, add, tracking);
    if (!tracking) return;
    if (add) {
      this.dirty.names.add(o);
      this.dirty.refs.add(o);
      this.dirty.uniques.add(o);
    } else {
      // Marked above as a holder of what it shared, or a referrer: nothing of it is checked or kept.
      this.dirty.names.delete(o);
      this.dirty.refs.delete(o);
      this.dirty.uniques.delete(o);
      this.found.names.delete(o);
      this.found.refs.delete(o);
      this.found.uniques.delete(o);
      for (const held of this.unresolved.values()) held.delete(o);
    }
  }

  /** An object's (or its child's) identity, references, unique values, rename and acyclic references, indexed or taken out. */
  private visit(x: ManifestObject, top: ManifestObject, add: boolean, tracking: boolean): void {
    if (this.identities) {
      if (add) this.insert(this.identities, x.identity, x);
      else removeFrom(this.identities, x.identity, x);
    }
    const refs = refsOf(x);
    if (this.referrers) {
      for (let i = 0; i < refs.length; i++) {
        const r = refs[i];
        if (!isName(r.def, r.value)) continue;
        const target = namedTarget(r.def)!.name;
        let byName = this.referrers.get(target);
        if (!byName) this.referrers.set(target, (byName = new Map()));
        let set = byName.get(r.value);
        if (!set) byName.set(r.value, (set = new Set()));
        if (add) set.add(top);
        else set.delete(top);
      }
    }
    const uniques = x.kind.uniques;
    if (uniques?.length) {
      const valuesOf = uniqueValuesOf(x);
      for (let i = 0; i < uniques.length; i++) {
        const u = uniques[i];
        let scopes = this.uniques.get(u);
        if (!scopes) this.uniques.set(u, (scopes = new Map()));
        const scope = u.perParent ? x.parent : undefined;
        let values = scopes.get(scope);
        if (!values) scopes.set(scope, (values = new Map()));
        const vs = valuesOf[i];
        for (let j = 0; j < vs.length; j++) {
          const after = add ? this.insert(values, vs[j], x) : removeFrom(values, vs[j], x);
          if (tracking) for (const h of each(after)) this.dirty.uniques.add(h.parent ?? h);
          else if (Array.isArray(after)) for (const h of after) this.clashing.add(h.parent ?? h);
        }
        if (!add && !values.size) scopes.delete(scope);
      }
    }
    if (x.renamedFrom !== undefined) {
      if (add) this.renamed.add(x);
      else this.renamed.delete(x);
    }
    if (hasAcyclic(refs)) {
      if (add) this.acyclic.add(x);
      else this.acyclic.delete(x);
      for (let i = 0; i < refs.length; i++) if (refs[i].def.acyclic) this.acyclicTargets.add(namedTarget(refs[i].def)?.name ?? '');
      this.cyclesDirty = true;
    }
    // Any object that comes or goes may be what a rename names (or names no more).
    if (this.renamed.size || x.renamedFrom !== undefined) this.renamesDirty = true;
  }

  private nameChanged(kind: string, name: string): void {
    if (!this.referrers) {
      this.referrers = new Map();
      for (const byName of this.names.values()) {
        for (const h of byName.values()) for (const top of each(h)) this.visitRefs(top);
      }
    }
    for (const top of this.referrers.get(kind)?.get(name) ?? []) this.dirty.refs.add(top);
    for (const top of this.unresolved.get(kind) ?? []) this.dirty.refs.add(top);
    if (this.acyclic.size && this.acyclicTargets.has(kind)) this.cyclesDirty = true;
  }

  /** The names an object and its children refer to, into `referrers`. */
  private visitRefs(top: ManifestObject): void {
    for (const x of [top, ...top.children]) {
      for (const r of refsOf(x)) {
        if (!isName(r.def, r.value)) continue;
        const target = namedTarget(r.def)!.name;
        let byName = this.referrers!.get(target);
        if (!byName) this.referrers!.set(target, (byName = new Map()));
        let set = byName.get(r.value);
        if (!set) byName.set(r.value, (set = new Set()));
        set.add(top);
      }
    }
  }

  /** `o` into the holders of `key`, in manifest order; the holders after. */
  private insert<K>(m: Map<K, Holders>, key: K, o: ManifestObject): Holders {
    const had = m.get(key);
    if (had === undefined) {
      m.set(key, o);
      return o;
    }
    const list = Array.isArray(had) ? had : [had];
    let at = list.length;
    while (at > 0 && this.compare(list[at - 1], o) > 0) at--;
    list.splice(at, 0, o);
    m.set(key, list);
    return list;
  }

  /** Every problem the passes across documents find, in the order they find them. */
  problems(): Problem[] {
    const first = this.unchecked;
    if (first) {
      this.unchecked = undefined;
      for (let i = 0; i < first.length; i++) this.checkNames(first[i]);
      for (let i = 0; i < first.length; i++) this.checkRefs(first[i]);
      // Objects whose values no other object holds have no clash to find.
      for (let i = 0; i < first.length; i++) if (this.clashing.has(first[i])) this.checkUniques(first[i]);
      this.clashing.clear();
      this.renamesDirty = this.renamed.size > 0;
      this.cyclesDirty = this.acyclic.size > 0;
    } else {
      for (const o of this.dirty.names) this.checkNames(o);
      for (const o of this.dirty.refs) this.checkRefs(o);
      for (const o of this.dirty.uniques) this.checkUniques(o);
    }
    this.dirty.names.clear();
    this.dirty.refs.clear();
    this.dirty.uniques.clear();
    if (this.renamesDirty) this.renameProblems = this.renamePass();
    if (this.cyclesDirty) this.cycleProblems = this.cyclePass();
    this.renamesDirty = this.cyclesDirty = false;
    return [...this.inOrder(this.found.names), ...this.renameProblems, ...this.inOrder(this.found.refs), ...this.inOrder(this.found.uniques), ...this.cycleProblems];
  }

  private inOrder(found: Found): Problem[] {
    if (!found.size) return [];
    return [...found.keys()].sort(this.compare).flatMap((o) => found.get(o)!);
  }

  /** What a check of `o` found (in `found`), kept with `o`; nothing kept when it found nothing. */
  private store(found: Found, o: ManifestObject): void {
    const problems = this.scratch.take(undefined);
    if (problems) found.set(o, problems);
    else if (found.size) found.delete(o);
  }

  /** Names are unique per kind, children's per parent. */
  private checkNames(o: ManifestObject): void {
    const first = this.firstNamed(o.kind.name, o.name);
    if (first && first !== o) duplicateName(this.report, o, first);
    // Children (an edge's routes) are few: compared pairwise, with no map per parent.
    const kids = o.children;
    for (let i = 1; i < kids.length; i++) {
      for (let j = 0; j < i; j++) {
        if (kids[j].identity === kids[i].identity) {
          duplicateName(this.report, kids[i], kids[j]); // the first child of that name
          break;
        }
      }
    }
    this.store(this.found.names, o);
  }

  private firstNamed(kind: string, name: string): ManifestObject | undefined {
    return firstOf(this.names.get(kind)?.get(name));
  }

  /** Every name a reference uses exists among the manifests. */
  private checkRefs(o: ManifestObject): void {
    if (this.found.refs.has(o)) for (const held of this.unresolved.values()) held.delete(o);
    for (let c = -1; c < o.children.length; c++) {
      const x = c < 0 ? o : o.children[c];
      const refs = refsOf(x);
      for (let i = 0; i < refs.length; i++) {
        const r = refs[i];
        if (!isName(r.def, r.value)) continue;
        const target = namedTarget(r.def)!;
        if (this.firstNamed(target.name, r.value)) continue;
        let held = this.unresolved.get(target.name);
        if (!held) this.unresolved.set(target.name, (held = new Set()));
        held.add(o);
        const hint = didYouMean(r.value, this.namesOf(target.name));
        this.report(x, r.path, 'unknown-reference', `no ${target.manifestKind} named "${r.value}" in the manifests${hint || ' (use its id to point at an object the manifests do not manage)'}`);
      }
    }
    this.store(this.found.refs, o);
  }

  /** A kind's names, in the order their first holders come in the manifests. */
  private namesOf(kind: string): string[] {
    const byName = this.names.get(kind);
    if (!byName) return [];
    return [...byName].map(([name, h]) => ({ name, first: firstOf(h)! }))
      .sort((a, b) => this.compare(a.first, b.first)).map((x) => x.name);
  }

  /** Values the service keeps unique (hostports, route matches) are unique across the manifests. */
  private checkUniques(o: ManifestObject): void {
    for (let c = -1; c < o.children.length; c++) {
      const x = c < 0 ? o : o.children[c];
      const uniques = x.kind.uniques;
      if (!uniques?.length) continue;
      const valuesOf = uniqueValuesOf(x);
      for (let i = 0; i < uniques.length; i++) {
        const u = uniques[i];
        const values = this.uniques.get(u)?.get(u.perParent ? x.parent : undefined);
        const vs = valuesOf[i];
        for (let j = 0; j < vs.length; j++) {
          const value = vs[j];
          const first = firstOf(values?.get(value));
          // The first holder's first time holding it is no clash; any other is.
          if (!first || (first === x && (j === 0 || vs.indexOf(value) === j))) continue;
          const p = positionOf(first, fieldHolding(first, value));
          this.report(x, fieldHolding(x, value), `duplicate-${u.scope}`, `${u.conflict(value).replace(/^[a-z_]+: /, '')} (also in ${first.identity} at ${p.file}:${p.line}:${p.col})`);
        }
      }
    }
    this.store(this.found.uniques, o);
  }

  /**
   * Renames: `renamed_from` names an object that is no longer in the manifests (else both would
   * claim the live object), differs from the new name, and is claimed by one object only.
   */
  private renamePass(): Problem[] {
    const out: Problem[] = [];
    if (!this.renamed.size) return out;
    const add = adder(out);
    const current = this.identitiesIndex();
    const claimed = new Map<string, ManifestObject>();
    for (const o of [...this.renamed].sort(this.compare)) {
      if (o.renamedFrom === o.name) {
        add(o, ['renamed_from'], 'renamed-from', 'is the object\'s own name: give the name it had before');
        continue;
      }
      // Its former identities under its own old name (with its parent's names, old and new).
      const olds = o.previousIdentities.filter((id) => id.endsWith(`/${o.renamedFrom}`));
      const still = olds.map((id) => firstOf(current.get(id))).find((x) => x !== undefined);
      if (still) {
        const p = positionOf(still, ['name']);
        add(o, ['renamed_from'], 'renamed-from', `${still.identity} is still in the manifests (${p.file}:${p.line}:${p.col}): remove it, or rename this object from another name`);
        continue;
      }
      const taken = olds.find((id) => claimed.has(id));
      if (taken) {
        const p = positionOf(claimed.get(taken)!, ['renamed_from']);
        add(o, ['renamed_from'], 'renamed-from', `${taken} is already renamed at ${p.file}:${p.line}:${p.col}: one object can take it`);
        continue;
      }
      for (const id of olds) claimed.set(id, o);
    }
    return out;
  }

  /** Every object (children too) by identity, made on first use and kept up to date after. */
  private identitiesIndex(): Map<string, Holders> {
    if (!this.identities) {
      this.identities = new Map();
      const tops = [...this.names.values()].flatMap((byName) => [...byName.values()].flatMap((h) => [...each(h)])).sort(this.compare);
      for (const o of tops) {
        this.insert(this.identities, o.identity, o);
        for (const c of o.children) this.insert(this.identities, c.identity, c);
      }
    }
    return this.identities;
  }

  /** References declared acyclic (failover children) form no cycle among the manifests. */
  private cyclePass(): Problem[] {
    const out: Problem[] = [];
    if (!this.acyclic.size) return out;
    const add = adder(out);
    const edges = (o: ManifestObject) => !hasAcyclic(refsOf(o)) ? [] :
      refsOf(o).filter((r) => r.def.acyclic && isName(r.def, r.value))
        .map((r) => ({ to: this.firstNamed(namedTarget(r.def)!.name, r.value), path: r.path }))
        .filter((e): e is { to: ManifestObject; path: (string | number)[] } => !!e.to);
    const state = new Map<ManifestObject, 'open' | 'done'>();
    const reported = new Set<string>();
    const visit = (o: ManifestObject, stack: ManifestObject[]) => {
      state.set(o, 'open');
      for (const e of edges(o)) {
        if (state.get(e.to) === 'open') {
          const trail = [...stack, o];
          const cycle = [...trail.slice(trail.indexOf(e.to)), e.to];
          const key = cycle.slice(0, -1).map((x) => x.identity).sort().join(',');
          if (!reported.has(key)) {
            reported.add(key);
            add(o, e.path, 'reference-cycle', `references form a cycle: ${cycle.map((x) => x.name).join(' → ')}`);
          }
        } else if (!state.has(e.to)) visit(e.to, [...stack, o]);
      }
      state.set(o, 'done');
    };
    for (const o of [...this.acyclic].sort(this.compare)) if (!state.has(o) && edges(o).length) visit(o, []);
    return out;
  }
}

function duplicateName(add: Add, x: ManifestObject, first: ManifestObject): void {
  const p = positionOf(first, ['name']);
  add(x, ['name'], 'duplicate-name', `${x.kind.manifestKind ?? x.kind.title} name "${x.name}" is already used at ${p.file}:${p.line}:${p.col}`);
}

/** Where a child sits among its parent's children (-1: a top-level object, before them all). */
function childIndex(o: ManifestObject): number {
  return o.parent ? o.parent.children.indexOf(o) : -1;
}

function firstOf(h: Holders | undefined): ManifestObject | undefined {
  return Array.isArray(h) ? h[0] : h;
}

function* each(h: Holders | undefined): Iterable<ManifestObject> {
  if (h === undefined) return;
  if (Array.isArray(h)) yield* h;
  else yield h;
}

/** One time `o` holds `key` taken out; the holders after (undefined: none). */
function removeFrom<K>(m: Map<K, Holders>, key: K, o: ManifestObject): Holders | undefined {
  const had = m.get(key);
  if (had === undefined) return undefined;
  if (!Array.isArray(had)) {
    if (had === o) m.delete(key);
    return m.get(key);
  }
  const at = had.indexOf(o);
  if (at >= 0) had.splice(at, 1);
  if (had.length === 1) m.set(key, had[0]);
  return m.get(key);
}

/** Which field of an object holds a value (for the position of a unique-key clash). */
function fieldHolding(o: ManifestObject, value: string): (string | number)[] {
  for (const [k, v] of Object.entries(o.body)) {
    if (typeof v === 'string' && v.toLowerCase() === value.toLowerCase()) return [k];
    if (Array.isArray(v)) {
      const i = v.findIndex((x) => typeof x === 'string' && x.toLowerCase() === value.toLowerCase());
      if (i >= 0) return [k, i];
    }
  }
  return ['name'];
}

function hasAcyclic(refs: RefValue[]): boolean {
  for (let i = 0; i < refs.length; i++) if (refs[i].def.acyclic) return true;
  return false;
}
