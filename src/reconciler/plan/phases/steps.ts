import { collectionPath } from '../../../contract/paths.js';
import { getPath } from '../../../kinds/paths.js';
import type { Body, KindDef, KindRuntimeConfig } from '../../../kinds/types.js';
import { appliedHashes, encodeMetadata } from '../../ownership/marker.js';
import { creationChanges, diffValues } from '../changes.js';
import { copyOf, DEFAULT_CONFIG, identical, resetValue, same, setAt, tokenReader, type Normal, type Settlement, type Symbolize } from '../normalize.js';
import { stepPatch } from '../patch.js';
import type { DesiredObject, ObservedObject } from '../state.js';
import { isSecretToken, placeholder, type SecretToken } from '../tokens.js';
import type { Change, ProtectedChange, Step, StepObject } from '../types.js';
import type { PlanContext } from './context.js';
import { markDrift, markerOf, metadataChanges, sameMetadata } from './marker.js';
import type { Match, Matched } from './match.js';
import { moduleSteps, nothingStoredWarnings, pick } from './modules.js';
import { creator, idOf, materialize, refDeps } from './refs.js';
import { objectPath } from '../../../contract/paths.js';

/** A live object to delete once nothing needs it: the step's id, and why. */
export interface PendingDelete { o: ObservedObject; identity: string; id: string; reason: string }

/** The steps phase's value: what each manifest object needs done. */
export interface Planned {
  /** The objects' steps, object by object in the manifests' order. */
  readonly steps: readonly Step[];
  /** Identity → the ids of its steps (create or replace, update, module steps); objects with none are absent. */
  readonly stepsOf: ReadonlyMap<string, readonly string[]>;
  /** The live objects replaces leave behind: deleted once their referrers moved (the deletes phase). */
  readonly retired: readonly PendingDelete[];
  /** Replaces of protected objects. */
  readonly protectedChanges: readonly ProtectedChange[];
  readonly warnings: readonly string[];
  /** Identities planned and found unchanged (no step, no warning). */
  readonly settled: readonly string[];
}

/**
 * The steps that bring each manifest object (each of `only`, when given) to what the manifests
 * say: a create, a replace when a field that cannot change does, or an update and module steps
 * for what differs. Nothing here deletes a live object; a replace hands the old one on (`retired`).
 */
export function planSteps(ctx: PlanContext, matched: Matched): Planned {
  const s = new Stepping(ctx, matched);
  const { only, paired } = ctx.opts;
  // Matches are in the manifests' order, one per manifest object.
  let i = 0;
  for (const dec of matched.matches.values()) {
    const at = i++;
    if (dec.conflicted || (only && !only.has(dec.d.identity))) continue;
    if (!dec.o) s.create(dec, 'create');
    else if (dec.replaced) s.create(dec, 'replace');
    else s.update(dec, paired && ctx.desired[at] === dec.d && paired.owned[at] === dec.o ? paired.settled[at] : undefined);
  }
  return { steps: s.steps, stepsOf: s.stepsOf, retired: s.retired, protectedChanges: s.protectedChanges, warnings: s.warnings, settled: s.settled };
}

/** The working state of one steps phase: built here, returned as a value, never touched afterwards. */
class Stepping {
  readonly steps: Step[] = [];
  readonly stepsOf = new Map<string, string[]>();
  readonly retired: PendingDelete[] = [];
  readonly protectedChanges: ProtectedChange[] = [];
  readonly warnings: string[] = [];
  readonly settled: string[] = [];
  /** Ids read as the identities of the objects kept: what normal forms compare. */
  private readonly sym: Symbolize;
  private readonly config: KindRuntimeConfig;

  constructor(private readonly ctx: PlanContext, private readonly m: Matched) {
    this.sym = tokenReader(m.keptRefs);
    this.config = ctx.opts.config ?? DEFAULT_CONFIG;
  }

  /** The normal form of a body, read with the plan's ids (shared: callers must not modify it). */
  private norm(kind: KindDef, body: Body): Normal {
    return this.ctx.memo.normalForm(kind, body, this.sym, this.config);
  }

  private add(dec: Match, step: Step): Step {
    this.steps.push(step);
    const ids = this.stepsOf.get(dec.d.identity);
    if (ids) ids.push(step.id);
    else this.stepsOf.set(dec.d.identity, [step.id]);
    return step;
  }

  private stepObject(dec: Match): StepObject {
    const o: StepObject = { kind: dec.d.kind.name, identity: dec.d.identity, name: dec.d.name };
    if (dec.o) o.id = dec.o.id;
    if (dec.d.parentIdentity) o.parent = dec.d.parentIdentity;
    return o;
  }

  private collection(d: DesiredObject): string {
    if (!d.kind.parent) return collectionPath(d.kind, null);
    return collectionPath(d.kind, idOf(this.m, d.parentIdentity!));
  }

  /**
   * A create, or a replace (a create, the old object retired once its referrers moved). A kind
   * with guard modules attaches its traffic modules only after the create (fail closed).
   */
  create(dec: Match, action: 'create' | 'replace') {
    const { d } = dec;
    const mods = (d.kind.modules ?? []).filter((m) => d.body[m.name]);
    this.warnings.push(...nothingStoredWarnings(d, mods));
    const guards = mods.filter((m) => m.role === 'guard');
    const later = guards.length ? mods.filter((m) => m.role === 'traffic') : [];
    const body: Body = {};
    for (const [k, v] of Object.entries(d.body)) if (!later.some((m) => m.name === k)) body[k] = materialize(this.m, v);
    const shown = this.norm(d.kind, d.body);
    body.metadata = encodeMetadata(markerOf(this.ctx.opts.stack, d, hashesOf(shown, d.userMetadata)), d.userMetadata);
    const changes: Change[] = creationChanges({ ...shown.fields, ...shown.modules });
    if (d.userMetadata !== undefined) changes.push({ path: 'metadata', after: d.userMetadata });
    const parentDep = d.parentIdentity ? creator(this.m, d.parentIdentity) : undefined;
    const id = `${d.identity}:${action}`;
    const step = this.add(dec, {
      id, action, object: this.stepObject(dec),
      request: { method: 'POST', path: this.collection(d), body },
      changes, dependsOn: [...(parentDep ? [parentDep] : []), ...refDeps(this.m, d.body)], yields: d.identity,
    });
    if (action === 'replace') {
      const old = dec.o!;
      const was = this.norm(old.kind, old.body).fields;
      const fields = (d.kind.immutable ?? []).filter((f) => !same(shown.fields[f], was[f]));
      step.reason = `${fields.join(', ')} cannot change in place: create the new ${d.kind.title}, move every referrer to it, then delete ${old.id}`;
      step.changes = fields.flatMap((f) => diffValues(f, was[f], shown.fields[f]));
      this.retired.push({ o: old, identity: d.identity, id: `${d.identity}:delete-replaced`, reason: `replaced by the new ${d.kind.title} (${d.identity}:replace)` });
      if (this.ctx.protection.covers(d.identity, old.marker)) this.protectedChanges.push({ step: id, identity: d.identity, id: old.id, action: 'replace' });
    }
    const guardNames = guards.map((x) => x.name).join(', ');
    for (const m of later) {
      this.add(dec, {
        id: `${d.identity}:module.put:${m.name}`, action: 'module.put', object: this.stepObject(dec), module: m.name,
        request: { method: 'PUT', path: `${this.collection(d)}/${placeholder(d.identity)}/${m.name}`, body: materialize(this.m, d.body[m.name]) },
        changes: [], dependsOn: [id, ...refDeps(this.m, d.body, [m.name])],
        reason: `fail closed: ${m.name} is attached only after the ${guardNames} module${guards.length > 1 ? 's are' : ' is'} in place`,
      });
    }
  }

  /**
   * An update of what differs (fields and marker in one PATCH) and module steps; nothing for an
   * object as the manifests say. `ahead`: the object was found unchanged as it was read (`Paired`).
   */
  update(dec: Match, ahead: Settlement | undefined) {
    const d = dec.d;
    const o = dec.o!;
    const stack = this.ctx.opts.stack;
    // Most objects of a plan are unchanged. Their normal forms were mostly compared while the pages
    // arrived (`NormMemo.settleAhead`, and its metadata then too when the caller pairs them); the
    // others are settled by one structural comparison (what follows would find every field and
    // module the same, one by one).
    if (ahead && this.ctx.memo.stillSettled(ahead, d.body, this.sym, this.config)) return void this.settled.push(d.identity);
    const sameMeta = sameMetadata(stack, d, o);
    const oBody = dec.renamedFrom ? secretsRenamed(d, o, dec.renamedFrom) : o.body;
    if (sameMeta && this.ctx.memo.settled(d.body, oBody, this.sym, this.config)) return void this.settled.push(d.identity);
    const want = this.norm(d.kind, d.body);
    const have = this.norm(o.kind, oBody);
    if (sameMeta && identical(want.fields, have.fields) && identical(want.modules, have.modules)) return void this.settled.push(d.identity);
    const patch: Body = {};
    const changes: Change[] = [];
    for (const f in d.kind.fields) {
      if (!(f in want.fields) && !(f in have.fields)) continue;
      if (same(want.fields[f], have.fields[f])) continue;
      patch[f] = f in d.body ? materialize(this.m, d.body[f]) : resetValue(d.kind, f);
      if (patch[f] === undefined) {
        delete patch[f];
        this.warnings.push(`${d.identity}: ${f} was removed from the manifest but has no default to restore; it keeps ${JSON.stringify(have.fields[f])}`);
        continue;
      }
      changes.push(...diffValues(f, have.fields[f], want.fields[f]));
    }
    const metaChanges = metadataChanges(stack, d, o);
    const h = hashesOf(want, d.userMetadata);
    const marker = markerOf(stack, d, h);
    if (metaChanges.length) changes.push(...metaChanges);
    // What the stack applies is recorded with it (`Marker.h`): a changed manifest value is written
    // with its hash, in the PATCH, which then carries the changed modules too (one write).
    const restamp = marker.h !== o.marker?.h && (Object.keys(patch).length > 0 || modulesWritten(want, have));
    if (metaChanges.length || restamp) patch.metadata = encodeMetadata(marker, d.userMetadata);
    const needPatch = Object.keys(patch).length > 0;
    const mods = moduleSteps(this.m, dec, want, have, needPatch, () => this.stepObject(dec));
    this.warnings.push(...mods.warnings);
    for (const step of mods.steps) this.add(dec, step);
    const planned = (key: string) => refDeps(this.m, d.body, [key]).length > 0;
    markDrift(mods.steps, o.marker, h, planned);
    for (const m of mods.inPatch) {
      patch[m.name] = materialize(this.m, d.body[m.name]);
      changes.push(...diffValues(m.name, have.modules[m.name], want.modules[m.name]));
    }
    if (!needPatch) return;
    const keys = Object.keys(patch).filter((k) => k !== 'metadata');
    const [before, after] = [pick(have, keys), pick(want, keys)];
    if (patch.metadata !== undefined) {
      if (o.metadata !== undefined) before.metadata = o.metadata;
      after.metadata = patch.metadata;
    }
    this.add(dec, {
      id: `${d.identity}:update`, action: 'update', object: this.stepObject(dec),
      request: { method: 'PATCH', path: objectPath(d.kind, o.id, o.parentId ?? null), body: patch },
      changes, dependsOn: [...refDeps(this.m, d.body, Object.keys(patch)), ...mods.steps.map((x) => x.id)],
      ...(dec.adopted ? { reason: `adopts unmanaged ${d.kind.title} ${o.id}: stamps the ownership marker` } : {}),
      ...(dec.renamedFrom ? { reason: `renamed from ${dec.renamedFrom}: the object is kept, its ownership marker renamed` } : {}),
      ...stepPatch(before, after, changes),
    });
    markDrift([this.steps[this.steps.length - 1]], o.marker, h, planned);
  }
}

/**
 * A renamed object's observed body as if its secrets had been fingerprinted under the new identity:
 * its marker still has them under the old one (`via`), where the same value has another
 * fingerprint. Each secret whose stored fingerprint is the manifest value's under `via` is the
 * same secret: compared as unchanged, not sent again (only the marker is renamed). One whose
 * value changed keeps the stored fingerprint, and is planned as changed.
 */
function secretsRenamed(d: DesiredObject, o: ObservedObject, via: string): Body {
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

/** `Marker.h` of a normal form: its fields, modules and the user's metadata, by name. */
function hashesOf(n: Normal, userMetadata: string | undefined): string {
  return appliedHashes({ ...n.fields, ...n.modules, metadata: userMetadata });
}

/** Whether some module is added or changed (not only removed): a write that records what it applies. */
function modulesWritten(want: Normal, have: Normal): boolean {
  for (const k in want.modules) if (want.modules[k] && !same(want.modules[k], have.modules[k])) return true;
  return false;
}
