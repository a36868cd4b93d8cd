import { kindByName } from '../../kinds/registry.js';
import { moduleCheckForm } from '../../kinds/check.js';
import { getPath } from '../../kinds/paths.js';
import type { Body, CheckContext, KindDef, KindRuntimeConfig, ModuleDef, UniqueDef } from '../../kinds/types.js';
import { BODY_LIMIT } from '../../contract/limits.js';
import { collectionPath } from '../../contract/paths.js';
import { formatPath } from '../manifests/problems.js';
import { namedTarget } from '../manifests/schema.js';
import { refValues } from '../manifests/validate.js';
import { encodeMetadata, MARKER_VERSION, TOOL, type Marker } from '../ownership/marker.js';
import { creationChanges, diffValues } from './changes.js';
import { copyOf, DEFAULT_CONFIG, identical, normalizeFields, NormMemo, resetValue, same, setAt, tokenReader, type Normal, type Symbolize } from './normalize.js';
import { keptCopy, referencedIds } from './duplicates.js';
import { orderSteps } from './order.js';
import { stepPatch } from './patch.js';
import { DEFAULT_THRESHOLD, safetyBlocks, type Threshold } from './safety.js';
import { Protection } from './protect.js';
import { scopePlan } from './scope.js';
import type { DesiredObject, Identities, ObservedObject } from './state.js';
import { isRefToken, isSecretToken, placeholder, type SecretToken } from './tokens.js';
import { canonicalJson } from '../../util/canonical-json.js';

/** Stands for a reference whose target is not matched yet (no id has this form). */
const UNRESOLVED = '<unresolved reference>';
import { MARKER_CHANGE, PLAN_FORMAT_VERSION, type Change, type Conflict, type Plan, type ProtectedChange, type Step, type StepObject } from './types.js';

export interface DiffOptions {
  stack: string;
  /** The API URL or `embedded:<dir>`, recorded in the plan. */
  target: string;
  /** Take over unmanaged objects that collide with manifest objects (same hostport, same CA). */
  adopt?: boolean;
  /** The command to show for adopting (the CLI knows the directory and flags). */
  adoptCommand?: string;
  threshold?: Threshold;
  /** Deployment settings some defaults depend on (the session cookie prefix). */
  config?: KindRuntimeConfig;
  /**
   * Watch's incremental plans: only these desired objects are planned; the others are matched
   * (so references to them read as their ids) but not compared. The caller vouches that they were
   * found unchanged before and have not changed since.
   */
  only?: Identities;
  /** When `observed` is a part of what was read (with `only`): every object read, for the ids that exist and the safety threshold's counts. */
  everyObserved?: ObservedObject[];
  /** Filled with the identities of the planned objects found unchanged (no step, no warning). */
  settled?: Set<string>;
  /** Selectors of protected objects (the stack file's `safety.protect`), besides `protect: true` in manifests. */
  protect?: readonly string[];
  /** `--allow-protected-changes`: protected objects may be deleted (pruned, destroyed) and replaced. */
  allowProtected?: boolean;
  /** `--target`: plan only the objects these selectors name (`scopePlan`). */
  targets?: readonly string[];
  /** `plan --destroy` / `destroy`: delete every object the stack owns; the manifests only say what is protected. */
  destroy?: boolean;
}

/** What the planner decided for one desired object. */
interface Decision {
  d: DesiredObject;
  o?: ObservedObject;
  replaced?: boolean;
  adopted?: boolean;
  /** Matched through the identity the object had before a rename (`renamed_from`). */
  renamedFrom?: string;
  conflicted?: boolean;
  /** Ids of steps acting on this object (its create / update / module steps). */
  steps: string[];
}

/**
 * The plan that takes `observed` to `desired`: a pure function (no I/O, clock or randomness), so
 * the same inputs give the same plan, byte for byte.
 */
export function diff(desired: DesiredObject[], observed: ObservedObject[], opts: DiffOptions, memo: NormMemo = new NormMemo('plan')): Plan {
  const protection = new Protection(opts.protect, desired, opts.allowProtected);
  let plan = new Planner(opts.destroy ? [] : desired, observed, opts, memo, protection).plan();
  // Destroying is the stack's whole point here: the share of objects deleted is not a surprise to stop.
  if (opts.destroy) plan = { ...plan, blocked: [], destroy: true };
  if (opts.targets?.length) plan = scopePlan(plan, opts.targets, desired, observed, opts.destroy ? undefined : opts.threshold ?? DEFAULT_THRESHOLD);
  return plan;
}

class Planner {
  private readonly decisions = new Map<string, Decision>();
  private readonly steps: Step[] = [];
  private readonly warnings: string[] = [];
  private readonly conflicts: Conflict[] = [];
  private readonly stepsOfObserved = new Map<string, string[]>();
  private readonly stepById = new Map<string, Step>();
  private readonly claimed = new Set<string>();
  private sym: Symbolize = (id) => id;

  /** `memo`: normal forms kept across plans (watch); a plan of its own otherwise. */
  constructor(private readonly desired: DesiredObject[], private readonly observed: ObservedObject[], private readonly opts: DiffOptions, private readonly memo: NormMemo,
    private readonly protection: Protection) {}

  /** Deletes and replaces of protected objects, as planned (a refused delete drops out at the end). */
  private readonly protectedChanges: ProtectedChange[] = [];

  plan(): Plan {
    this.match();
    this.symbols();
    const only = this.opts.only;
    for (const d of this.desired) if (!only || only.has(d.identity)) this.planObject(this.decisions.get(d.identity)!);
    this.missingRawRefs();
    this.foreignChildren();
    this.oversizedRequests();
    this.planDeletes();
    this.uniqueOrder();
    const steps = orderSteps(this.steps);
    const touched = new Set<string>();
    for (const s of steps) if (s.object.id) touched.add(s.object.id);
    const observed: Record<string, string> = {};
    for (const o of this.observed.filter((x) => touched.has(x.id)).sort((a, b) => a.id.localeCompare(b.id))) observed[o.id] = o.fingerprint;
    const protectedChanges = this.protectedChanges.filter((c) => this.stepById.has(c.step)); // a delete refused (still used) has no step
    const versions = conditionalVersions(steps, this.observed, touched);
    return {
      formatVersion: PLAN_FORMAT_VERSION,
      stack: this.opts.stack,
      target: this.opts.target,
      observed,
      ...(Object.keys(versions).length ? { versions } : {}),
      steps,
      summary: this.summary(),
      warnings: this.warnings,
      conflicts: this.conflicts,
      blocked: safetyBlocks(steps, this.opts.everyObserved ?? this.observed, this.opts.threshold ?? DEFAULT_THRESHOLD),
      ...(protectedChanges.length ? { protectedChanges } : {}),
    };
  }

  /** The normal form of a body, read with the plan's ids (shared: callers must not modify it). */
  private norm(kind: KindDef, body: Body): Normal {
    return this.memo.normalForm(kind, body, this.sym, this.opts.config ?? DEFAULT_CONFIG);
  }

  /** The normal plain fields with ids as they are (what matching and unique values compare). */
  private rawFields(kind: KindDef, body: Body): Body {
    return this.memo.rawFields(kind, body);
  }

  /** Values a kind keeps unique, read from the plain fields' normal form (hostports lower-cased). */
  private uniqueValues(kind: KindDef, body: Body, u: NonNullable<KindDef['uniques']>[number]): string[] {
    try {
      return u.values(this.rawFields(kind, body));
    } catch {
      return [];
    }
  }

  // ——— matching desired objects to observed ones ———

  private match() {
    // This stack's objects by marker identity: one object, or a list when an interrupted apply
    // left duplicates (rare: no list is made per object).
    const owned = new Map<string, ObservedObject | ObservedObject[]>();
    for (const o of this.observed) {
      if (o.owner.type !== 'this' || !o.marker) continue;
      const had = owned.get(o.marker.id);
      owned.set(o.marker.id, had === undefined ? o : Array.isArray(had) ? [...had, o] : [had, o]);
    }
    for (const d of this.desired) {
      const dec: Decision = { d, steps: [] };
      this.decisions.set(d.identity, dec);
      const parent = d.parentIdentity ? this.decisions.get(d.parentIdentity) : undefined;
      if (d.parentIdentity && (!parent?.o || parent.replaced)) continue; // a new parent has no children yet
      const parentId = parent?.o?.id;
      let found = owned.get(d.identity);
      // Renamed: the object marked with the old identity is kept (and re-marked), not deleted and made again.
      const via = found === undefined ? d.previousIdentities?.find((id) => owned.has(id)) : undefined;
      if (via) found = owned.get(via);
      if (found !== undefined && !Array.isArray(found)) {
        // The common case: one object carries this identity.
        if (found.kind === d.kind && found.parentId === parentId) {
          dec.o = found;
          dec.renamedFrom = via;
          dec.replaced = this.immutableChanged(d, found);
          this.claimed.add(found.id);
          continue;
        }
      }
      const candidates = (Array.isArray(found) ? found : []).filter((o) => o.kind === d.kind && o.parentId === parentId);
      if (candidates.length) {
        // Duplicates (an interrupted apply, or two at once): keep one that fits the manifest,
        // preferring one that something refers to, so that nothing working is re-pointed.
        const fit = candidates.filter((o) => !this.immutableChanged(d, o));
        const referenced = () => (this.referenced ??= referencedIds(this.opts.everyObserved ?? this.observed));
        const best = keptCopy(fit, referenced) ?? candidates.find((o) => referenced().has(o.id)) ?? candidates.reduce((a, b) => (a.id > b.id ? a : b));
        dec.o = best;
        dec.renamedFrom = via;
        dec.replaced = this.immutableChanged(d, best);
        this.claimed.add(best.id);
        continue;
      }
      this.collide(dec, parentId);
    }
    if (this.opts.adopt) this.adoptByContent();
  }

  /**
   * `--adopt` for objects nothing identifies — kinds with no identifying values (`adoptByContent`:
   * failover backends), and objects whose identifying values are empty (an HTTPS edge with no
   * hostports): a new manifest object takes over the one unmanaged object with the same fields
   * and metadata. References count once their targets are matched, so objects that refer to each
   * other are adopted in rounds, leaves first. The children of an edge adopted so are then matched
   * inside it, as those of an edge adopted by its hostports are.
   */
  private adoptByContent() {
    const byContent = (kind: KindDef, keys: () => string[]) => !!kind.adoptByContent || !keys().length;
    const pending = this.desired.map((d) => this.decisions.get(d.identity)!)
      .filter((dec) => !dec.o && !dec.conflicted && !dec.d.parentIdentity && byContent(dec.d.kind, () => this.keys(dec.d.kind, dec.d.body)));
    if (!pending.length) return;
    const unmanaged = new Map<string, ObservedObject[]>();
    for (const o of this.observed) {
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
        const hits = (unmanaged.get(key) ?? []).filter((o) => !this.claimed.has(o.id));
        if (hits.length === 1) {
          dec.o = hits[0];
          dec.adopted = true;
          this.claimed.add(hits[0].id);
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
  private matchChildren(parent: Decision) {
    for (const d of this.desired) {
      if (d.parentIdentity !== parent.d.identity) continue;
      const dec = this.decisions.get(d.identity)!;
      if (!dec.o && !dec.conflicted) this.collide(dec, parent.o!.id);
    }
  }

  /** What adopting by content compares: kind, plain fields with ids as they are, and metadata. */
  private content(kind: KindDef, fields: Body, metadata: string | undefined): string {
    return `${kind.name}\0${canonicalJson(fields)}\0${metadata ?? ''}`;
  }

  private observedContent(o: ObservedObject): string {
    return this.content(o.kind, this.rawFields(o.kind, o.body), o.metadata);
  }

  /** A desired object's content, its references read as the ids matched so far; undefined while one is not matched yet. */
  private desiredContent(d: DesiredObject): string | undefined {
    const resolve = (v: unknown): unknown => {
      if (isRefToken(v)) {
        const dec = this.decisions.get(v.$ref);
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

  /** Ids some observed object refers to (read only when the manifests' objects have duplicates). */
  private referenced?: Set<string>;

  private immutableChanged(d: DesiredObject, o: ObservedObject): boolean {
    if (!d.kind.immutable?.length) return false;
    const a = this.rawFields(d.kind, d.body);
    const b = this.rawFields(o.kind, o.body);
    return (d.kind.immutable ?? []).some((f) => !same(a[f], b[f]));
  }

  /** Values that identify an object for adoption: declared collision keys and unique values. */
  private keys(kind: KindDef, body: Body): string[] {
    const n = this.rawFields(kind, body);
    const out: string[] = [];
    for (const f of kind.collisionKeys ?? []) {
      const v = n[f];
      for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v]) out.push(`${f}=${JSON.stringify(x)}`);
    }
    for (const u of kind.uniques ?? []) for (const v of this.uniqueValues(kind, body, u)) out.push(`${u.scope}=${v}`);
    return out;
  }

  private readonly keyCache = new Map<string, string[]>();
  private observedKeys(o: ObservedObject): string[] {
    let k = this.keyCache.get(o.id);
    if (!k) this.keyCache.set(o.id, (k = this.keys(o.kind, o.body)));
    return k;
  }

  /** A new manifest object that matches an existing object of someone else: adopt, or report. */
  private collide(dec: Decision, parentId: string | undefined) {
    const { d } = dec;
    const mine = new Set(this.keys(d.kind, d.body));
    if (!mine.size) return;
    const hits = this.observed.filter((o) => o.kind === d.kind && o.parentId === parentId && o.owner.type !== 'this' && !this.claimed.has(o.id) &&
      this.observedKeys(o).some((k) => mine.has(k)));
    // Several unmanaged ones alike (the same certificate twice): the one exactly as the manifest says is adopted, the others are not this object's.
    const exact = this.opts.adopt && hits.length > 1 ? this.exactAmong(dec, hits) : undefined;
    if (exact) {
      dec.o = exact;
      dec.adopted = true;
      this.claimed.add(exact.id);
      return;
    }
    for (const o of hits) {
      const what = `${d.identity} matches existing ${d.kind.title} ${o.id}`;
      if (o.owner.type === 'stack') {
        this.conflicts.push({ identity: d.identity, kind: d.kind.name, id: o.id, owner: 'stack', stack: o.owner.stack, message: `${what}, owned by stack "${o.owner.stack}"; remove it from one of the stacks` });
      } else if (this.opts.adopt && hits.length === 1) {
        dec.o = o;
        dec.adopted = true;
        this.claimed.add(o.id);
        return;
      } else {
        this.conflicts.push({
          identity: d.identity, kind: d.kind.name, id: o.id, owner: 'unmanaged',
          message: hits.length > 1 ? `${what} (one of ${hits.length}); only one object can be adopted` : `${what}, which no stack manages`,
          ...(hits.length === 1 && this.opts.adoptCommand ? { adopt: this.opts.adoptCommand } : {}),
        });
      }
    }
    if (hits.length) dec.conflicted = true;
  }

  /**
   * Of several unmanaged objects a manifest object matches (the service takes the same certificate
   * twice), the one whose fields and metadata are exactly the manifest's, when only one is.
   */
  private exactAmong(dec: Decision, hits: ObservedObject[]): ObservedObject | undefined {
    if (hits.some((o) => o.owner.type !== 'unmanaged')) return undefined;
    const key = this.desiredContent(dec.d);
    const exact = key === undefined ? [] : hits.filter((o) => this.observedContent(o) === key);
    return exact.length === 1 ? exact[0] : undefined;
  }

  /** Observed ids that stand for a manifest identity; replaced objects keep their raw id (referrers move). */
  private symbols() {
    const map = new Map<string, string>();
    for (const dec of this.decisions.values()) if (dec.o && !dec.replaced) map.set(dec.o.id, dec.d.identity);
    this.sym = tokenReader(map);
  }

  // ——— steps for one desired object ———

  private planObject(dec: Decision) {
    if (dec.conflicted) return;
    if (!dec.o) return this.planCreate(dec, 'create');
    if (dec.replaced) return this.planCreate(dec, 'replace');
    this.planUpdate(dec);
  }

  private stepObject(dec: Decision): StepObject {
    const o: StepObject = { kind: dec.d.kind.name, identity: dec.d.identity, name: dec.d.name };
    if (dec.o) o.id = dec.o.id;
    if (dec.d.parentIdentity) o.parent = dec.d.parentIdentity;
    return o;
  }

  /** The id to send for an identity: the existing object's, or a placeholder for one this plan creates. */
  private idOf(identity: string): string {
    const dec = this.decisions.get(identity);
    return dec?.o && !dec.replaced ? dec.o.id : placeholder(identity);
  }

  /** The step that brings an identity into existence in this plan, if any. */
  private creator(identity: string): string | undefined {
    const dec = this.decisions.get(identity);
    return dec && (!dec.o || dec.replaced) ? `${identity}:${dec.replaced ? 'replace' : 'create'}` : undefined;
  }

  /** Request value: references as ids (or placeholders), secret tokens left for apply. */
  private materialize(v: unknown): unknown {
    if (isRefToken(v)) return this.idOf(v.$ref);
    if (Array.isArray(v)) return v.map((x) => this.materialize(x));
    if (v && typeof v === 'object' && !('$secret' in v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.materialize(x)]));
    return v;
  }

  /** Steps creating the objects a body references must come first. */
  private refDeps(body: Body, only?: string[]): string[] {
    const deps: string[] = [];
    const visit = (v: unknown) => {
      if (isRefToken(v)) {
        const c = this.creator(v.$ref);
        if (c) deps.push(c);
      } else if (Array.isArray(v)) v.forEach(visit);
      else if (v && typeof v === 'object') Object.values(v).forEach(visit);
    };
    for (const [k, v] of Object.entries(body)) if (!only || only.includes(k)) visit(v);
    return deps;
  }

  /**
   * Whether a stored marker encodes as the one this plan would write for `d` (what
   * `encodeMetadata` writes), compared field by field: no marker is built or encoded.
   */
  private markedAs(d: DesiredObject, b: Marker | undefined): boolean {
    if (!b || (b.protect !== undefined && typeof b.protect !== 'boolean')) return false;
    if (b.tool !== TOOL || b.v !== MARKER_VERSION || b.stack !== this.opts.stack || b.id !== d.identity || !d.protect !== !b.protect) return false;
    return sameFingerprints(d.fp, b) && onlyMarkerKeys(b);
  }

  private marker(d: DesiredObject): Marker {
    return { tool: TOOL, v: MARKER_VERSION, stack: this.opts.stack, id: d.identity, fp: d.fp, protect: d.protect };
  }

  private collection(d: DesiredObject): string {
    if (!d.kind.parent) return collectionPath(d.kind, null);
    return collectionPath(d.kind, this.idOf(d.parentIdentity!));
  }

  private objectPath(kind: KindDef, id: string, parentId?: string): string {
    return `${collectionPath(kind, parentId ?? null)}/${id}`;
  }

  private addStep(dec: Decision | null, step: Step): Step {
    this.steps.push(step);
    this.stepById.set(step.id, step);
    if (dec) dec.steps.push(step.id);
    if (step.object.id) this.stepsOfObserved.set(step.object.id, [...(this.stepsOfObserved.get(step.object.id) ?? []), step.id]);
    return step;
  }

  private planCreate(dec: Decision, action: 'create' | 'replace') {
    const { d } = dec;
    const mods = (d.kind.modules ?? []).filter((m) => d.body[m.name]);
    this.nothingStoredChecks(d, mods);
    const guarded = mods.some((m) => m.role === 'guard');
    const later = guarded ? mods.filter((m) => m.role === 'traffic') : [];
    const body: Body = {};
    for (const [k, v] of Object.entries(d.body)) if (!later.some((m) => m.name === k)) body[k] = this.materialize(v);
    body.metadata = encodeMetadata(this.marker(d), d.userMetadata);
    const shown = this.norm(d.kind, d.body);
    const changes: Change[] = creationChanges({ ...shown.fields, ...shown.modules });
    if (d.userMetadata !== undefined) changes.push({ path: 'metadata', after: d.userMetadata });
    const parentDep = d.parentIdentity ? this.creator(d.parentIdentity) : undefined;
    const id = `${d.identity}:${action}`;
    const step = this.addStep(dec, {
      id, action, object: this.stepObject(dec),
      request: { method: 'POST', path: this.collection(d), body },
      changes, dependsOn: [...(parentDep ? [parentDep] : []), ...this.refDeps(d.body)], yields: d.identity,
    });
    if (action === 'replace') {
      const old = dec.o!;
      const fields = (d.kind.immutable ?? []).filter((f) => !same(this.norm(d.kind, d.body).fields[f], this.norm(old.kind, old.body).fields[f]));
      step.reason = `${fields.join(', ')} cannot change in place: create the new ${d.kind.title}, move every referrer to it, then delete ${old.id}`;
      step.changes = fields.flatMap((f) => diffValues(f, this.norm(old.kind, old.body).fields[f], shown.fields[f]));
      this.addDelete(old, d.identity, `${d.identity}:delete-replaced`, `replaced by the new ${d.kind.title} (${d.identity}:replace)`);
      if (this.protection.covers(d.identity, old.marker)) this.protectedChanges.push({ step: id, identity: d.identity, id: old.id, action: 'replace' });
    }
    for (const m of later) {
      this.addStep(dec, {
        id: `${d.identity}:module.put:${m.name}`, action: 'module.put', object: this.stepObject(dec), module: m.name,
        request: { method: 'PUT', path: `${this.collection(d)}/${placeholder(d.identity)}/${m.name}`, body: this.materialize(d.body[m.name]) },
        changes: [], dependsOn: [id, ...this.refDeps(d.body, [m.name])],
        reason: `fail closed: ${m.name} is attached only after the ${mods.filter((x) => x.role === 'guard').map((x) => x.name).join(', ')} module${mods.filter((x) => x.role === 'guard').length > 1 ? 's are' : ' is'} in place`,
      });
    }
  }

  private planUpdate(dec: Decision) {
    const d = dec.d;
    const o = dec.o!;
    // Most objects of a plan are unchanged. Their normal forms were mostly compared while the pages
    // arrived (`NormMemo.settleAhead`); the others are settled by one structural comparison (what
    // follows would find every field and module the same, one by one).
    const sameMeta = (d.userMetadata ?? '') === (o.userMetadata ?? '') && this.markedAs(d, o.marker);
    const oBody = dec.renamedFrom ? this.secretsRenamed(d, o, dec.renamedFrom) : o.body;
    if (sameMeta && this.memo.settled(d.body, oBody, this.sym, this.opts.config ?? DEFAULT_CONFIG)) return void this.opts.settled?.add(d.identity);
    const want = this.norm(d.kind, d.body);
    const have = this.norm(o.kind, oBody);
    if (sameMeta && identical(want.fields, have.fields) && identical(want.modules, have.modules)) return void this.opts.settled?.add(d.identity);
    const patch: Body = {};
    const changes: Change[] = [];
    for (const f in d.kind.fields) {
      if (!(f in want.fields) && !(f in have.fields)) continue;
      if (same(want.fields[f], have.fields[f])) continue;
      patch[f] = f in d.body ? this.materialize(d.body[f]) : resetValue(d.kind, f);
      if (patch[f] === undefined) {
        delete patch[f];
        this.warnings.push(`${d.identity}: ${f} was removed from the manifest but has no default to restore; it keeps ${JSON.stringify(have.fields[f])}`);
        continue;
      }
      changes.push(...diffValues(f, have.fields[f], want.fields[f]));
    }
    const metaChanges = this.metadataChanges(d, o);
    if (metaChanges.length) {
      patch.metadata = encodeMetadata(this.marker(d), d.userMetadata);
      changes.push(...metaChanges);
    }
    const needPatch = Object.keys(patch).length > 0;
    const { inPatch, moduleSteps } = this.planModules(dec, want, have, needPatch);
    for (const m of inPatch) {
      patch[m.name] = this.materialize(d.body[m.name]);
      changes.push(...diffValues(m.name, have.modules[m.name], want.modules[m.name]));
    }
    if (!needPatch) return;
    const keys = Object.keys(patch).filter((k) => k !== 'metadata');
    const [before, after] = [pick(have, keys), pick(want, keys)];
    if (patch.metadata !== undefined) {
      if (o.metadata !== undefined) before.metadata = o.metadata;
      after.metadata = patch.metadata;
    }
    this.addStep(dec, {
      id: `${d.identity}:update`, action: 'update', object: this.stepObject(dec),
      request: { method: 'PATCH', path: this.objectPath(d.kind, o.id, o.parentId), body: patch },
      changes, dependsOn: [...this.refDeps(d.body, Object.keys(patch)), ...moduleSteps],
      ...(dec.adopted ? { reason: `adopts unmanaged ${d.kind.title} ${o.id}: stamps the ownership marker` } : {}),
      ...(dec.renamedFrom ? { reason: `renamed from ${dec.renamedFrom}: the object is kept, its ownership marker renamed` } : {}),
      ...stepPatch(before, after, changes),
    });
  }

  /**
   * Rules that depend on what is stored, for modules written where nothing is (a new object, or a
   * module the object lacks): no secret can be carried over, so one the manifest leaves out
   * (`client_id` without `client_secret`) makes the service refuse the step. `validate` cannot know
   * that (it has no state): said here, as a warning naming the rule, before apply.
   */
  private nothingStoredChecks(d: DesiredObject, mods: ModuleDef[]) {
    for (const m of mods) {
      const given = d.body[m.name];
      if (!m.check || !given || typeof given !== 'object') continue;
      const form = moduleCheckForm(m, given as Body);
      const reports = (stored?: NonNullable<CheckContext['stored']>) => {
        const out: string[] = [];
        m.check!(form, { stored, report: (path, rule) => void out.push(`${formatPath(path)}: ${rule}`) });
        return out;
      };
      const unknown = new Set(reports()); // what validate reported already, or left to the service
      for (const r of reports({ carried: [] })) {
        if (!unknown.has(r)) this.warnings.push(`${d.identity}: ${r} — nothing is stored yet to carry it over from, so the service will refuse this step`);
      }
    }
  }

  /**
   * A renamed object's observed body as if its secrets had been fingerprinted under the new identity:
   * its marker still has them under the old one (`via`), where the same value has another
   * fingerprint. Each secret whose stored fingerprint is the manifest value's under `via` is the
   * same secret: compared as unchanged, not sent again (only the marker is renamed). One whose
   * value changed keeps the stored fingerprint, and is planned as changed.
   */
  private secretsRenamed(d: DesiredObject, o: ObservedObject, via: string): Body {
    const former = d.formerFp?.[via];
    const stored = o.marker?.fp;
    if (!former || !stored) return o.body;
    let body = o.body;
    const copied: object[] = [];
    for (const path in stored) {
      if (former[path] === undefined || former[path] !== stored[path] || d.fp[path] === undefined) continue;
      if (!isSecretToken(getPath(o.body, path))) continue; // the live object has no such field (a module gone)
      if (body === o.body) body = copyOf(o.body);
      setAt(body, path.split('.'), { $secret: 'stored', fingerprint: d.fp[path] } satisfies SecretToken, copied);
    }
    return body;
  }

  /** The user's metadata and the marker; the marker changes with secrets, stack, protect or adoption. */
  private metadataChanges(d: DesiredObject, o: ObservedObject): Change[] {
    const out: Change[] = [];
    if ((d.userMetadata ?? '') !== (o.userMetadata ?? '')) out.push({ path: 'metadata', before: o.userMetadata, after: d.userMetadata });
    if (!this.markedAs(d, o.marker)) {
      const describe = (m?: Marker) => (m ? `${m.stack}/${m.id}${m.protect ? ' (protected)' : ''}` : '(none)');
      const strip = (m: Marker) => encodeMetadata({ ...m, fp: {} }, undefined);
      const secretsOnly = o.marker && strip(o.marker) === strip(this.marker(d));
      if (!secretsOnly) out.push({ path: MARKER_CHANGE, before: describe(o.marker), after: describe(this.marker(d)) });
      else if (!out.length) out.push({ path: MARKER_CHANGE, before: 'secret fingerprints', after: 'secret fingerprints', sensitive: true });
    }
    return out;
  }

  /**
   * Module steps of an existing object. PATCH cannot delete a module, so removals are DELETEs;
   * changes ride in the PATCH when there is one (one atomic write with the marker), else PUTs.
   * Fail closed: traffic modules come off before guards change and go on after them; swapping one
   * exclusive module for another (oauth → oidc) takes the traffic module off, swaps, puts it back.
   */
  private planModules(dec: Decision, want: Normal, have: Normal, needPatch: boolean): { inPatch: ModuleDef[]; moduleSteps: string[] } {
    const d = dec.d;
    const mods = d.kind.modules ?? [];
    const added = mods.filter((m) => want.modules[m.name] && !same(want.modules[m.name], have.modules[m.name]));
    const removed = mods.filter((m) => have.modules[m.name] && !want.modules[m.name]);
    if (!added.length && !removed.length) return { inPatch: [], moduleSteps: [] };
    this.nothingStoredChecks(d, added.filter((m) => !have.modules[m.name]));
    const swapped = added.filter((m) => m.exclusiveGroup && removed.some((r) => r.exclusiveGroup === m.exclusiveGroup));
    const guardsChange = [...added, ...removed].some((m) => m.role === 'guard');
    const traffic = mods.filter((m) => m.role === 'traffic' && have.modules[m.name]);
    const bounce = swapped.length ? traffic.filter((m) => !removed.includes(m)) : [];
    const ids: string[] = [];
    const path = (m: ModuleDef) => `${this.objectPath(d.kind, dec.o!.id, dec.o!.parentId)}/${m.name}`;
    const put = (m: ModuleDef, deps: string[], reason?: string) => {
      const id = `${d.identity}:module.put:${m.name}`;
      const changes = diffValues(m.name, have.modules[m.name], want.modules[m.name]);
      this.addStep(dec, {
        id, action: 'module.put', object: this.stepObject(dec), module: m.name,
        request: { method: 'PUT', path: path(m), body: this.materialize(d.body[m.name]) },
        changes, dependsOn: [...deps, ...this.refDeps(d.body, [m.name])], ...(reason ? { reason } : {}),
        ...stepPatch(pick(have, [m.name]), pick(want, [m.name]), changes),
      });
      ids.push(id);
      return id;
    };
    const del = (m: ModuleDef, deps: string[], reason?: string) => {
      const id = `${d.identity}:module.delete:${m.name}`;
      this.addStep(dec, {
        id, action: 'module.delete', object: this.stepObject(dec), module: m.name,
        request: { method: 'DELETE', path: path(m) },
        changes: [{ path: m.name, before: '(configured)', after: '(removed)' }], dependsOn: deps, ...(reason ? { reason } : {}),
        ...stepPatch(pick(have, [m.name]), {}, []),
      });
      ids.push(id);
      return id;
    };
    const swapNames = swapped.map((m) => `${removed.find((r) => r.exclusiveGroup === m.exclusiveGroup)!.name} → ${m.name}`).join(', ');
    const off = bounce.map((m) => del(m, [], `fail closed: ${m.name} is taken off while ${swapNames} is swapped, and put back after`));
    const trafficOff = removed.filter((m) => m.role === 'traffic').map((m) => del(m, []));
    const guardOff = removed.filter((m) => m.role !== 'traffic').map((m) => del(m, [...off, ...trafficOff]));
    const swappedOn = swapped.map((m) => put(m, guardOff, `replaces ${removed.find((r) => r.exclusiveGroup === m.exclusiveGroup)!.name}: at most one ${m.exclusiveGroup} module may exist`));
    const rest = added.filter((m) => !swapped.includes(m) && !bounce.includes(m));
    // With a PATCH, the changed modules ride in it: one atomic write (with the marker's fingerprints).
    const inPatch = needPatch ? rest : [];
    const guardsOn = [...swappedOn];
    if (!needPatch) {
      for (const m of rest.filter((x) => x.role === 'guard')) guardsOn.push(put(m, guardOff));
      for (const m of rest.filter((x) => x.role !== 'guard')) {
        const after = m.role === 'traffic' && guardsChange;
        put(m, after ? [...guardsOn, ...guardOff] : [], after ? 'fail closed: attached after the guard modules change' : undefined);
      }
    }
    for (const m of bounce) {
      if (want.modules[m.name]) put(m, guardsOn, `fail closed: ${m.name} goes back on after ${swapNames}`);
    }
    return { inPatch, moduleSteps: ids };
  }

  /**
   * Steps whose request body is over the service's 1 MiB limit (every field within its own limit
   * can still add up: 100 headers of 4 KB, twice, and a thousand e-mail addresses): they would fail
   * with 413. Said now, as a warning. Secrets count as their references here (each is at most 4 KB).
   */
  private oversizedRequests() {
    for (const step of this.steps) {
      if (step.request.body === undefined) continue;
      const bytes = Buffer.byteLength(JSON.stringify(step.request.body));
      if (bytes <= BODY_LIMIT) continue;
      this.warnings.push(`${step.id}: its request body is about ${Math.ceil(bytes / 1024)} KiB, over the service's 1 MiB limit: the step will fail (413); spread the values over fewer or smaller fields`);
    }
  }

  /**
   * Raw ids (not names) in objects this plan writes that name a kind the plan has read every object
   * of, where no such object exists: the step would fail with 400 at apply. Said now, as a warning
   * (another stack's apply may still create it). Objects the plan leaves alone are not looked at: the
   * service accepted their references, and a referenced object cannot be deleted.
   */
  private missingRawRefs() {
    let ids: Set<string> | undefined;
    for (const dec of this.decisions.values()) {
      if (!dec.steps.length) continue;
      for (const r of refValues(dec.d)) {
        const target = namedTarget(r.def);
        if (!target || !r.value.startsWith(`${r.def.onlyPrefix ?? target.idPrefix}_`)) continue;
        ids ??= new Set((this.opts.everyObserved ?? this.observed).map((o) => o.id));
        if (ids.has(r.value)) continue;
        this.warnings.push(`${dec.d.identity}: ${formatPath(r.path)} names ${target.title} ${r.value}, which this account does not have: its step will fail (400) unless it is created first`);
      }
    }
  }

  /**
   * Children of this stack's objects that the stack does not manage (a route added to a managed
   * edge through the API): the plan leaves them alone, and says so — they change what the edge
   * serves, and "No changes." alone would hide them.
   */
  private foreignChildren() {
    let kept: Map<string, string> | undefined;
    for (const o of this.observed) {
      if (!o.parentId || o.owner.type === 'this' || this.claimed.has(o.id)) continue;
      if (!kept) {
        kept = new Map();
        for (const dec of this.decisions.values()) if (dec.o && !dec.replaced) kept.set(dec.o.id, dec.d.identity);
      }
      const parent = kept.get(o.parentId);
      if (!parent) continue;
      this.warnings.push(o.owner.type === 'stack'
        ? `${parent} holds ${o.kind.title} ${o.id}, which stack "${o.owner.stack}" manages: left alone`
        : `${parent} holds ${o.kind.title} ${o.id}, which no stack manages: left alone (export --all shows it; write it into the manifests and plan with --adopt to manage it here)`);
    }
  }

  // ——— deletes ———

  private readonly pendingDeletes: { o: ObservedObject; identity: string; id: string; reason: string }[] = [];

  private planDeletes() {
    const keptIds = new Set<string>();
    for (const dec of this.decisions.values()) if (dec.o) keptIds.add(dec.o.id);
    // Protected children that left the manifests, by parent: deleting the parent would delete them.
    const protectedChildren = new Map<string, string[]>();
    // Children this stack does not own (another stack's, or none's): deleting their parent would delete them.
    const foreignChildren = new Map<string, string[]>();
    for (const o of this.observed) {
      if (!o.parentId) continue;
      if (o.owner.type !== 'this') {
        if (this.claimed.has(o.id)) continue;
        const what = o.owner.type === 'stack' ? `${o.marker!.id} of stack "${o.owner.stack}"` : `${o.kind.title} ${o.id} (no stack manages it)`;
        foreignChildren.set(o.parentId, [...(foreignChildren.get(o.parentId) ?? []), what]);
        continue;
      }
      if (!this.protection.keeps(o.marker!.id, o.marker) || keptIds.has(o.id)) continue;
      protectedChildren.set(o.parentId, [...(protectedChildren.get(o.parentId) ?? []), o.marker!.id]);
    }
    for (const o of this.observed) {
      if (o.owner.type !== 'this' || keptIds.has(o.id)) continue;
      // Children go with their parent; only children of kept parents are deleted one by one.
      if (o.parentId && !keptIds.has(o.parentId)) continue;
      const identity = o.marker!.id;
      const dup = this.decisions.get(identity)?.o;
      if (!dup && this.protection.keeps(identity, o.marker)) {
        this.warnings.push(this.opts.destroy
          ? `${identity} (${o.id}) is protected: kept (--allow-protected-changes deletes it)`
          : `${identity} (${o.id}) is no longer in the manifests but is protected: kept`);
        this.renameHint(o, identity, 'kept (protected)');
        continue; // with its children: a protected edge is kept as it is, routes and all
      }
      const foreign = foreignChildren.get(o.id);
      if (foreign) {
        // This stack deletes only what it owns: the parent stays, with what it holds of others.
        this.warnings.push(`${identity} (${o.id}) is ${dup ? 'a duplicate' : 'no longer in the manifests'} but is kept: deleting it would delete ${foreign.join(', ')}, which this stack does not own (delete or move ${foreign.length === 1 ? 'it' : 'them'} first)`);
        keptIds.add(o.id);
        continue;
      }
      const guarded = dup ? undefined : protectedChildren.get(o.id);
      if (guarded) {
        // Kept as it is, so the protected ones keep their parent; its other children are pruned one by one.
        this.warnings.push(`${identity} (${o.id}) is no longer in the manifests but is kept: deleting it would delete ${guarded.join(', ')}, which ${guarded.length === 1 ? 'is' : 'are'} protected (remove protect there to let it go)`);
        keptIds.add(o.id);
        continue;
      }
      const reason = dup ? `duplicate of ${identity} (${dup.id}), left by an interrupted apply or two applies at once`
        : this.opts.destroy ? 'the stack is destroyed' : 'no longer in the manifests (prune)';
      const step = this.addDelete(o, identity, `${identity}:delete${dup ? ':' + o.id : ''}`, reason);
      if (dup) continue;
      this.renameHint(o, identity);
      if (this.protection.allow) this.protectedGoing(o, identity, step);
    }
    this.resolveDeletes();
  }

  /**
   * An object deleted (or kept only because it is protected) while a new one of the same kind,
   * under the same parent, takes its hostport, route match or certificate looks like a rename: say how to keep the object instead (`renamed_from`).
   */
  private renameHint(o: ObservedObject, identity: string, fate = 'deleted') {
    // The objects this plan creates, by kind, parent and each value only one object may hold (made once).
    if (!this.created) {
      this.created = new Map();
      for (const dec of this.decisions.values()) {
        const d = dec.d;
        if (dec.o || dec.conflicted) continue;
        const parentId = d.parentIdentity ? this.decisions.get(d.parentIdentity)?.o?.id : undefined;
        if (d.parentIdentity && !parentId) continue; // inside a new parent: its parent's hint says it
        for (const k of this.keys(d.kind, d.body)) this.created.set(`${d.kind.name}\0${parentId ?? ''}\0${k}`, d);
      }
    }
    for (const k of this.keys(o.kind, o.body)) {
      const d = this.created.get(`${o.kind.name}\0${o.parentId ?? ''}\0${k}`);
      if (!d) continue;
      const oldName = identity.slice(identity.lastIndexOf('/') + 1);
      // A unique value's scope, or a collision key's field (`ca_pem`): the kind says what it is.
      const key = k.slice(0, k.indexOf('='));
      const what = o.kind.uniques?.find((u) => u.scope === key)?.what ?? key;
      this.warnings.push(`${identity} is ${fate} and ${d.identity} created with the same ${what}: if it was renamed, write "renamed_from: ${oldName}" in ${d.identity} to keep the object (${fate === 'deleted' ? 'no delete and create' : 'not a second one beside it'})`);
      return;
    }
  }

  private created?: Map<string, DesiredObject>;

  private readonly deleteIds = new Set<string>();
  private addDelete(o: ObservedObject, identity: string, id: string, reason: string): string {
    // Copies of one identity pruned together (duplicates of an object that left the manifests): a step each.
    if (this.deleteIds.has(id)) id = `${id}:${o.id}`;
    this.deleteIds.add(id);
    this.pendingDeletes.push({ o, identity, id, reason });
    return id;
  }

  /** Owned children by parent id (made once, for `protectedGoing`). */
  private childrenOf?: Map<string, ObservedObject[]>;

  /** Records the protected objects a delete takes (allowed by the flag): the object, and its children going with it. */
  private protectedGoing(o: ObservedObject, identity: string, step: string) {
    if (this.protection.covers(identity, o.marker)) this.protectedChanges.push({ step, identity, id: o.id, action: 'delete' });
    if (!this.childrenOf) {
      this.childrenOf = new Map();
      for (const c of this.observed) if (c.parentId && c.owner.type === 'this') this.childrenOf.set(c.parentId, [...(this.childrenOf.get(c.parentId) ?? []), c]);
    }
    for (const c of this.childrenOf.get(o.id) ?? []) {
      if (this.protection.covers(c.marker!.id, c.marker)) this.protectedChanges.push({ step, identity: c.marker!.id, id: c.id, action: 'delete' });
    }
  }

  /**
   * Each DELETE waits for every step that drops a reference to its object (referrers updated or
   * deleted, children deleted with their parent). A delete something still needs is left out with a
   * warning, and that may leave others out in turn: repeat until nothing changes.
   */
  private resolveDeletes() {
    if (!this.pendingDeletes.length) return;
    let pending = [...this.pendingDeletes];
    // Who refers to whom, and which decision holds an observed object: computed once, not per delete.
    const referrers = new Map<string, ObservedObject[]>();
    for (const r of this.observed) {
      for (const target of new Set(refValues({ kind: r.kind, body: r.body }).map((x) => x.value))) referrers.set(target, [...(referrers.get(target) ?? []), r]);
    }
    const decisionOf = new Map<string, Decision>();
    for (const dec of this.decisions.values()) if (dec.o && !dec.replaced) decisionOf.set(dec.o.id, dec);
    const refusals = new Map<string, string>();
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
          const dec = decisionOf.get(r.id);
          if (gone) need.push(gone);
          else if (dec && dec.steps.length && !this.stillReferences(dec, p.o.id)) need.push(...dec.steps);
          else blocked.set(p.id, [...(blocked.get(p.id) ?? []), r.marker ? `${r.marker.id} (${r.id})` : `${r.kind.title} ${r.id}`]);
        }
        deps.set(p.id, need);
      }
      if (!blocked.size) {
        for (const p of pending) this.emitDelete(p, deps.get(p.id)!);
        break;
      }
      for (const [id, users] of blocked) refusals.set(id, users.join(', '));
      pending = pending.filter((p) => !blocked.has(p.id));
    }
    for (const p of this.pendingDeletes) {
      const users = refusals.get(p.id);
      if (users) this.warnings.push(`${p.identity} (${p.o.id}) is not deleted: still used by ${users}`);
    }
  }

  private emitDelete(p: { o: ObservedObject; identity: string; id: string; reason: string }, deps: string[]) {
    const { o } = p;
    this.addStep(null, {
      id: p.id, action: 'delete',
      object: { kind: o.kind.name, identity: p.identity, name: p.identity.split('/').pop()!, id: o.id, ...(o.parentId ? { parent: this.parentIdentity(o.parentId) } : {}) },
      request: { method: 'DELETE', path: this.objectPath(o.kind, o.id, o.parentId) },
      changes: [], dependsOn: deps, reason: p.reason,
    });
  }

  private parentIdentity(parentId: string): string {
    return this.observed.find((x) => x.id === parentId)?.marker?.id ?? parentId;
  }

  private stillReferences(dec: Decision, id: string): boolean {
    return JSON.stringify(this.materialize(dec.d.body)).includes(`"${id}"`);
  }

  /**
   * A value the service keeps unique (a hostport, a route match) moving from one object to another:
   * the step that frees it goes before the step that takes it.
   */
  private uniqueOrder() {
    if (!this.steps.length) return; // nothing takes a value from anyone
    const holders = new Map<string, ObservedObject>();
    for (const o of this.observed) {
      for (const u of o.kind.uniques ?? []) {
        for (const v of this.uniqueValues(o.kind, o.body, u)) holders.set(`${o.kind.name}:${u.scope}:${u.perParent ? o.parentId : ''}:${v}`, o);
      }
    }
    for (const dec of this.decisions.values()) {
      if (!dec.d.kind.uniques?.length) continue;
      const main = dec.steps.map((id) => this.stepById.get(id)!).find((s) => s.action === 'create' || s.action === 'replace' || s.action === 'update');
      if (!main) continue;
      const parentId = dec.d.parentIdentity ? this.decisions.get(dec.d.parentIdentity)?.o?.id : undefined;
      for (const u of dec.d.kind.uniques ?? []) {
        for (const v of this.uniqueValues(dec.d.kind, dec.d.body, u)) {
          const holder = holders.get(`${dec.d.kind.name}:${u.scope}:${u.perParent ? parentId : ''}:${v}`);
          if (!holder || holder.id === dec.o?.id) continue;
          const theirs = this.stepsOfObserved.get(holder.id) ?? [];
          if (!theirs.some((id) => this.reaches(id, main.id))) main.dependsOn.push(...theirs);
          else main.dependsOn.push(this.release(holder, u, v, dec.d.identity));
        }
      }
    }
  }

  /** Whether step `from` depends, directly or not, on step `to`. */
  private reaches(from: string, to: string): boolean {
    const byId = this.stepById;
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length) {
      const id = stack.pop()!;
      if (id === to) return true;
      if (seen.has(id)) continue;
      seen.add(id);
      stack.push(...(byId.get(id)?.dependsOn ?? []));
    }
    return false;
  }

  /**
   * Two objects trading unique values (routes swapping matches, edges swapping hostports) would
   * wait for each other: the holder first lets go of the value — a list drops it, a single value
   * takes a temporary form — and its own update sets the final value later.
   */
  private release(holder: ObservedObject, u: UniqueDef, value: string, taker: string): string {
    const identity = holder.marker?.id ?? holder.id;
    const id = `${identity}:release`;
    let step = this.stepById.get(id);
    const body = (step?.request.body as Body | undefined) ?? {};
    const freed = (x: unknown): unknown =>
      Array.isArray(x) ? x.filter((y) => String(y).toLowerCase() !== value) : `${String(x)}~edgeplane-swap`;
    // The field that carries the value is the one whose release makes the unique let go of it (a
    // description may hold the same text as the hostport or match it describes).
    const field = Object.keys(holder.body).find((k) => {
      const x = body[k] ?? holder.body[k];
      const holds = Array.isArray(x) ? x.some((y) => String(y).toLowerCase() === value) : String(x).toLowerCase() === value;
      return holds && !this.uniqueValues(holder.kind, { ...holder.body, ...body, [k]: freed(x) }, u).includes(value);
    });
    if (!field) return id;
    body[field] = freed(body[field] ?? holder.body[field]);
    if (!step) {
      step = this.addStep(null, {
        id, action: 'update',
        object: { kind: holder.kind.name, identity, name: identity.split('/').pop()!, id: holder.id, ...(holder.parentId ? { parent: this.parentIdentity(holder.parentId) } : {}) },
        request: { method: 'PATCH', path: this.objectPath(holder.kind, holder.id, holder.parentId), body },
        changes: [], dependsOn: [], reason: `frees ${value} for ${taker} first: the two objects trade unique values`,
      });
      for (const other of this.stepsOfObserved.get(holder.id) ?? []) {
        if (other !== id) this.stepById.get(other)!.dependsOn.push(id);
      }
    } else step.reason += `, ${value} for ${taker}`;
    step.changes = Object.keys(body).map((f) => ({ path: f, before: holder.body[f], after: body[f] }));
    Object.assign(step, stepPatch(Object.fromEntries(Object.keys(body).map((f) => [f, holder.body[f]])), body, []));
    return id;
  }

  private summary() {
    const s = { create: 0, update: 0, replace: 0, delete: 0 };
    for (const dec of this.decisions.values()) {
      if (!dec.steps.length) continue;
      if (!dec.o) s.create++;
      else if (dec.replaced) s.replace++;
      else s.update++;
    }
    s.delete = this.steps.filter((x) => x.action === 'delete' && !x.id.endsWith(':delete-replaced')).length;
    return s;
  }
}

/** The fields and modules `keys` of a normal form (those it has), for a step's `before` / `after`. */
function pick(n: Normal, keys: string[]): Body {
  const out: Body = {};
  for (const k of keys) {
    const v = k in n.fields ? n.fields[k] : n.modules[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** The same secret fingerprints (an absent map is an empty one). */
function sameFingerprints(fa: Record<string, string> | undefined, b: Marker): boolean {
  const fb = b.fp;
  let n = 0;
  for (const k in fa) {
    if (!fb || fb[k] !== fa[k]) return false;
    n++;
  }
  for (const _ in fb) if (--n < 0) return false;
  return true;
}

/** Anything else a stored marker carries (a field a later version added) is a difference. */
function onlyMarkerKeys(b: Marker): boolean {
  for (const k in b) if (!MARKER_KEYS.has(k)) return false;
  return true;
}

const MARKER_KEYS = new Set(['tool', 'v', 'stack', 'id', 'fp', 'protect']);

/**
 * The ETags apply sends as `If-Match`, by object id: each touched object the plan read a version
 * of, except a parent whose children the plan also writes (a route's write raises its edge's
 * version: the edge's own step would find it changed by the plan itself).
 */
function conditionalVersions(steps: Step[], observed: ObservedObject[], touched: Set<string>): Record<string, string> {
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
