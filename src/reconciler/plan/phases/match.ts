import { isRefTarget } from '../../../kinds/registry.js';
import type { Body, KindDef } from '../../../kinds/types.js';
import { canonicalJson } from '../../../util/canonical-json.js';
import { keptCopy } from '../duplicates.js';
import { normalizeFields, same, type Settlement } from '../normalize.js';
import type { DesiredObject, ObservedObject } from '../state.js';
import { isRefToken } from '../tokens.js';
import type { Conflict } from '../types.js';
import type { PlanContext } from './context.js';
import { identifyingKeys } from './keys.js';

/** What matching found for one manifest object. */
export interface Match {
  readonly d: DesiredObject;
  /** The live object it is (absent: none, it is created). */
  readonly o?: ObservedObject;
  /** An immutable field differs: the live object is replaced by a new one. */
  readonly replaced?: boolean;
  /** An unmanaged object taken over (`--adopt`). */
  readonly adopted?: boolean;
  /** Matched through the identity the object had before a rename (`renamed_from`). */
  readonly renamedFrom?: string;
  /** It collides with objects it cannot take over: a conflict says so, and nothing is planned for it. */
  readonly conflicted?: boolean;
}

/** The match phase's value: which live object each manifest object is. */
export interface Matched {
  /** By identity, in the manifests' order. */
  readonly matches: ReadonlyMap<string, Match>;
  /** The live objects some manifest object took (kept, replaced or adopted). */
  readonly claimed: Claimed;
  /** Id → identity of the live objects kept as they are (matched, not replaced): what their ids read as. */
  readonly kept: IdentityOf;
  /** The same, of the kinds a reference can name (`isRefTarget`): what the ids in normal forms read as. */
  readonly keptRefs: IdentityOf;
  readonly conflicts: readonly Conflict[];
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Id → identity, as a `Map` answers it. */
export type IdentityOf = Pick<ReadonlyMap<string, string>, 'get'>;

/** This stack's live objects marked with one identity: one, or a list when an interrupted apply left duplicates (rare: no list is made per object). */
type Owned = ObservedObject | ObservedObject[];

/**
 * For each desired object of a plan, by its place: this stack's live objects marked with its
 * identity, and, when that is one object found unchanged as it was read, what the memo said then
 * (`DiffOptions.paired`).
 */
export interface Paired {
  readonly owned: (Owned | undefined)[];
  /** `settled[i]`: the one object `owned[i]` has the metadata a plan writes, and `NormMemo.settleAhead` found it the same. */
  readonly settled: (Settlement | undefined)[];
}

/** Notes `o` (marked with the identity of desired object `at`) in `paired`. */
export function pairWith(paired: Paired, at: number, o: ObservedObject): void {
  const had = paired.owned[at];
  paired.owned[at] = with1(had, o);
  if (had !== undefined) paired.settled[at] = undefined; // duplicates: which one is kept is match's to say
}

function with1(had: Owned | undefined, o: ObservedObject): Owned {
  return had === undefined ? o : Array.isArray(had) ? [...had, o] : [had, o];
}

/** This stack's live objects by the identity in their markers. */
function ownedByIdentity(observed: readonly ObservedObject[]): Map<string, Owned> {
  const owned = new Map<string, Owned>();
  for (const o of observed) if (o.owner.type === 'this' && o.marker) owned.set(o.marker.id, with1(owned.get(o.marker.id), o));
  return owned;
}

/**
 * Matches by identity in the manifests' order, as a list indexed by identity when first asked: a
 * plan with nothing to do asks for none, and tens of thousands of insertions after the last page
 * are saved. Identities must be unique (a second match of one would be listed twice).
 */
class MatchList implements ReadonlyMap<string, Mutable<Match>> {
  private readonly list: Mutable<Match>[] = [];
  private index: Map<string, Mutable<Match>> | undefined;

  set(identity: string, m: Mutable<Match>): this {
    this.list.push(m);
    this.index?.set(identity, m);
    return this;
  }

  private indexed(): Map<string, Mutable<Match>> {
    return (this.index ??= new Map(this.list.map((m) => [m.d.identity, m])));
  }

  get(identity: string): Mutable<Match> | undefined { return this.indexed().get(identity); }
  has(identity: string): boolean { return this.indexed().has(identity); }
  get size(): number { return this.list.length; }
  values(): MapIterator<Mutable<Match>> { return this.list.values(); }
  *keys(): MapIterator<string> { for (const m of this.list) yield m.d.identity; }
  *entries(): MapIterator<[string, Mutable<Match>]> { for (const m of this.list) yield [m.d.identity, m]; }
  [Symbol.iterator](): MapIterator<[string, Mutable<Match>]> { return this.entries(); }
  forEach(fn: (m: Mutable<Match>, identity: string, map: ReadonlyMap<string, Mutable<Match>>) => void, thisArg?: unknown): void {
    for (const m of this.list) fn.call(thisArg, m, m.d.identity, this);
  }
}

/**
 * The live objects a match took, asked by object or by id: an object a list gave twice (two
 * copies, one id) is taken as one.
 */
export interface Claimed extends Iterable<ObservedObject> {
  has(o: ObservedObject): boolean;
  hasId(id: string): boolean;
  readonly size: number;
}

/**
 * Kept by object (hashing tens of thousands of ids for the first time after the last page cost
 * more than the set); the ids are indexed only when an object is not found (a plan that deletes
 * nothing asks none).
 */
class ClaimedSet implements Claimed {
  private readonly objects = new Set<ObservedObject>();
  private ids: Set<string> | undefined;

  add(o: ObservedObject): void {
    this.objects.add(o);
    this.ids?.add(o.id);
  }

  has(o: ObservedObject): boolean {
    return this.objects.has(o) || this.hasId(o.id);
  }

  hasId(id: string): boolean {
    return (this.ids ??= new Set(Array.from(this.objects, (o) => o.id))).has(id);
  }

  get size(): number {
    return this.objects.size;
  }

  [Symbol.iterator](): Iterator<ObservedObject> {
    return this.objects.values();
  }
}

/** Stands for a reference whose target is not matched yet (no id has this form). */
const UNRESOLVED = '<unresolved reference>';

/**
 * Matches each manifest object to the live object it is: by the identity in this stack's markers
 * (or one it had before a rename), choosing one of duplicates an interrupted apply left; else by
 * the values that identify it (a hostport, a certificate) among objects of others — adopted with
 * `--adopt` when unmanaged, a conflict otherwise.
 */
export function match(ctx: PlanContext): Matched {
  const m = new Matching(ctx);
  m.byIdentity();
  if (ctx.opts.adopt) m.adoptByContent();
  // Every plan reads references through `keptRefs` (thousands of ids at most); `kept`, over every
  // object, is made only when asked (deletes and objects of others inside this stack's).
  const keptOf = (which: (o: ObservedObject) => boolean) => {
    const out = new Map<string, string>();
    for (const dec of m.matches.values()) if (dec.o && !dec.replaced && which(dec.o)) out.set(dec.o.id, dec.d.identity);
    return out;
  };
  let all: Map<string, string> | undefined;
  const kept: IdentityOf = { get: (id) => (all ??= keptOf(() => true)).get(id) };
  return { matches: m.matches, claimed: m.claimed, kept, keptRefs: keptOf((o) => isRefTarget(o.kind)), conflicts: m.conflicts };
}

/** The working state of one match: built here, returned as a value, never touched afterwards. */
class Matching {
  readonly matches: Map<string, Mutable<Match>> | MatchList;
  readonly claimed = new ClaimedSet();
  readonly conflicts: Conflict[] = [];
  private readonly keyCache = new Map<string, string[]>();

  constructor(private readonly ctx: PlanContext) {
    // Identities are unique when the caller paired them (a valid stack): a list serves.
    this.matches = ctx.opts.paired ? new MatchList() : new Map();
  }

  byIdentity() {
    const { desired, opts } = this.ctx;
    const paired = opts.paired;
    let index: Map<string, Owned> | undefined;
    const owned = () => (index ??= ownedByIdentity(this.ctx.observed));
    /** The last object with no parent: the manifests list its children right after it. */
    let top: Mutable<Match> | undefined;
    for (let i = 0; i < desired.length; i++) {
      const d = desired[i];
      const dec: Mutable<Match> = { d };
      this.matches.set(d.identity, dec);
      const pi = d.parentIdentity;
      const parent = pi === undefined ? undefined : top !== undefined && pi === top.d.identity ? top : this.matches.get(pi);
      if (pi === undefined) top = dec;
      if (d.parentIdentity && (!parent?.o || parent.replaced)) continue; // a new parent has no children yet
      const parentId = parent?.o?.id;
      let found = paired ? paired.owned[i] : owned().get(d.identity);
      // Renamed: the object marked with the old identity is kept (and re-marked), not deleted and made again.
      const via = found === undefined ? d.previousIdentities?.find((id) => owned().has(id)) : undefined;
      if (via) found = owned().get(via);
      if (found !== undefined && !Array.isArray(found)) {
        // The common case: one object carries this identity.
        if (found.kind === d.kind && found.parentId === parentId) {
          this.take(dec, found, via);
          continue;
        }
      }
      const candidates = (Array.isArray(found) ? found : []).filter((o) => o.kind === d.kind && o.parentId === parentId);
      if (candidates.length) {
        // Duplicates (an interrupted apply, or two at once): keep one that fits the manifest,
        // preferring one that something refers to, so that nothing working is re-pointed.
        const fit = candidates.filter((o) => !this.immutableChanged(d, o));
        const referenced = (id: string) => this.ctx.live.referenced(id);
        const best = keptCopy(fit, referenced) ?? candidates.find((o) => referenced(o.id)) ?? candidates.reduce((a, b) => (a.id > b.id ? a : b));
        this.take(dec, best, via);
        continue;
      }
      this.collide(dec, parentId);
    }
  }

  private take(dec: Mutable<Match>, o: ObservedObject, via: string | undefined) {
    dec.o = o;
    dec.renamedFrom = via;
    dec.replaced = this.immutableChanged(dec.d, o);
    this.claimed.add(o);
  }

  private adopt(dec: Mutable<Match>, o: ObservedObject) {
    dec.o = o;
    dec.adopted = true;
    this.claimed.add(o);
  }

  /**
   * `--adopt` for objects nothing identifies — kinds with no identifying values (`adoptByContent`:
   * failover backends), and objects whose identifying values are empty (an HTTPS edge with no
   * hostports): a new manifest object takes over the one unmanaged object with the same fields
   * and metadata. References count once their targets are matched, so objects that refer to each
   * other are adopted in rounds, leaves first. The children of an edge adopted so are then matched
   * inside it, as those of an edge adopted by its hostports are.
   */
  adoptByContent() {
    const byContent = (kind: KindDef, keys: () => string[]) => !!kind.adoptByContent || !keys().length;
    const pending = this.ctx.desired.map((d) => this.matches.get(d.identity)!)
      .filter((dec) => !dec.o && !dec.conflicted && !dec.d.parentIdentity && byContent(dec.d.kind, () => identifyingKeys(this.ctx, dec.d.kind, dec.d.body)));
    if (!pending.length) return;
    const unmanaged = new Map<string, ObservedObject[]>();
    for (const o of this.ctx.observed) {
      if (o.owner.type !== 'unmanaged' || o.parentId || !byContent(o.kind, () => this.observedKeys(o))) continue;
      const key = this.observedContent(o);
      unmanaged.set(key, [...(unmanaged.get(key) ?? []), o]);
    }
    for (let progress = true; progress;) {
      progress = false;
      for (const dec of pending) {
        if (dec.o || dec.conflicted) continue;
        const key = this.desiredContent(dec.d);
        if (key === undefined) continue; // wait for the targets' round
        const hits = (unmanaged.get(key) ?? []).filter((o) => !this.claimed.has(o));
        if (hits.length === 1) {
          this.adopt(dec, hits[0]);
          this.matchChildren(dec);
          progress = true;
        } else if (hits.length > 1) {
          dec.conflicted = true;
          this.conflicts.push({
            identity: dec.d.identity, kind: dec.d.kind.name, id: hits[0].id, owner: 'unmanaged',
            message: `${dec.d.identity} is the same as ${hits.length} unmanaged ${dec.d.kind.title}s (${hits.map((o) => o.id).join(', ')}); only one can be adopted: tell them apart (a description) first`,
          });
        }
      }
    }
  }

  /** The children of a parent matched after the first pass (adopted by content): matched inside it now. */
  private matchChildren(parent: Match) {
    for (const d of this.ctx.desired) {
      if (d.parentIdentity !== parent.d.identity) continue;
      const dec = this.matches.get(d.identity)!;
      if (!dec.o && !dec.conflicted) this.collide(dec, parent.o!.id);
    }
  }

  /** What adopting by content compares: kind, plain fields with ids as they are, and metadata. */
  private content(kind: KindDef, fields: Body, metadata: string | undefined): string {
    return `${kind.name}\0${canonicalJson(fields)}\0${metadata ?? ''}`;
  }

  private observedContent(o: ObservedObject): string {
    return this.content(o.kind, this.ctx.memo.rawFields(o.kind, o.body), o.metadata);
  }

  /** A desired object's content, its references read as the ids matched so far; undefined while one is not matched yet. */
  private desiredContent(d: DesiredObject): string | undefined {
    const resolve = (v: unknown): unknown => {
      if (isRefToken(v)) {
        const dec = this.matches.get(v.$ref);
        return dec?.o && !dec.replaced ? dec.o.id : UNRESOLVED;
      }
      if (Array.isArray(v)) return v.map(resolve);
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x)]));
      return v;
    };
    const body = resolve(d.body) as Body;
    if (JSON.stringify(body).includes(UNRESOLVED)) return undefined;
    return this.content(d.kind, normalizeFields(d.kind, body, (x) => x), d.userMetadata);
  }

  private immutableChanged(d: DesiredObject, o: ObservedObject): boolean {
    if (!d.kind.immutable?.length) return false;
    const a = this.ctx.memo.rawFields(d.kind, d.body);
    const b = this.ctx.memo.rawFields(o.kind, o.body);
    return d.kind.immutable.some((f) => !same(a[f], b[f]));
  }

  private observedKeys(o: ObservedObject): string[] {
    let k = this.keyCache.get(o.id);
    if (!k) this.keyCache.set(o.id, (k = identifyingKeys(this.ctx, o.kind, o.body)));
    return k;
  }

  /** A new manifest object that matches an existing object of someone else: adopt, or report. */
  private collide(dec: Mutable<Match>, parentId: string | undefined) {
    const { d } = dec;
    const mine = new Set(identifyingKeys(this.ctx, d.kind, d.body));
    if (!mine.size) return;
    const hits = this.ctx.observed.filter((o) => o.kind === d.kind && o.parentId === parentId && o.owner.type !== 'this' && !this.claimed.has(o) &&
      this.observedKeys(o).some((k) => mine.has(k)));
    // Several unmanaged ones alike (the same certificate twice): the one exactly as the manifest says is adopted, the others are not this object's.
    const exact = this.ctx.opts.adopt && hits.length > 1 ? this.exactAmong(dec, hits) : undefined;
    if (exact) return this.adopt(dec, exact);
    const { adopt, adoptCommand } = this.ctx.opts;
    for (const o of hits) {
      const what = `${d.identity} matches existing ${d.kind.title} ${o.id}`;
      if (o.owner.type === 'stack') {
        this.conflicts.push({ identity: d.identity, kind: d.kind.name, id: o.id, owner: 'stack', stack: o.owner.stack, message: `${what}, owned by stack "${o.owner.stack}"; remove it from one of the stacks` });
      } else if (adopt && hits.length === 1) {
        return this.adopt(dec, o);
      } else {
        this.conflicts.push({
          identity: d.identity, kind: d.kind.name, id: o.id, owner: 'unmanaged',
          message: hits.length > 1 ? `${what} (one of ${hits.length}); only one object can be adopted` : `${what}, which no stack manages`,
          ...(hits.length === 1 && adoptCommand ? { adopt: adoptCommand } : {}),
        });
      }
    }
    if (hits.length) dec.conflicted = true;
  }

  /**
   * Of several unmanaged objects a manifest object matches (the service takes the same certificate
   * twice), the one whose fields and metadata are exactly the manifest's, when only one is.
   */
  private exactAmong(dec: Match, hits: ObservedObject[]): ObservedObject | undefined {
    if (hits.some((o) => o.owner.type !== 'unmanaged')) return undefined;
    const key = this.desiredContent(dec.d);
    const exact = key === undefined ? [] : hits.filter((o) => this.observedContent(o) === key);
    return exact.length === 1 ? exact[0] : undefined;
  }
}
