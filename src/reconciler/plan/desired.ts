import type { Body, KindDef } from '../../kinds/types.js';
import type { Position } from '../manifests/problems.js';
import { isSecretRef, positionOf, type ManifestObject } from '../manifests/model.js';
import type { ResolvedSecret } from '../manifests/secrets.js';
import { namedTarget } from '../manifests/schema.js';
import { isName, refsOf } from '../manifests/object-values.js';
import { secretValues } from '../manifests/validate.js';
import type { DesiredObject } from './state.js';
import type { RefToken, SecretToken } from './tokens.js';
import { setAt } from './normalize.js';
import { Scratch } from '../../util/scratch.js';

/** A desired object; its source position is found on first read (it may need the file parsed again). */
class Desired implements DesiredObject {
  readonly kind: DesiredObject['kind'];
  readonly identity: string;
  readonly name: string;
  readonly protect: boolean;
  readonly parentIdentity?: string;
  readonly previousIdentities: string[];
  readonly embedField?: string;
  readonly #from: ManifestObject;
  #position?: Position;
  formerFp?: Record<string, Record<string, string>>;

  constructor(from: ManifestObject, public body: Body, readonly userMetadata: string | undefined, readonly fp: Record<string, string>) {
    this.#from = from;
    this.kind = from.kind;
    this.identity = from.identity;
    this.name = from.name;
    this.protect = from.protect;
    this.parentIdentity = from.parent?.identity;
    this.previousIdentities = from.previousIdentities;
    this.embedField = from.parent ? (from.at[from.at.length - 2] as string) : undefined;
  }

  get source(): Position {
    return (this.#position ??= positionOf(this.#from));
  }
}

/**
 * Desired objects by manifest object, kept between watch runs (validation shares the objects of
 * unchanged documents); an entry is used while the object's secrets keep their fingerprints.
 */
export type DesiredMemo = WeakMap<ManifestObject, DesiredObject>;


/** The fingerprints of an object without secrets (shared; frozen: never added to). */
const NO_SECRETS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * Valid manifest objects → desired objects: names become `RefToken`s of the identity they name,
 * secrets `SecretToken`s (source and fingerprint, never the value), metadata is split off.
 */
export function buildDesired(objects: ManifestObject[], secrets: Map<string, ResolvedSecret>, memo?: DesiredMemo): DesiredObject[] {
  const out: DesiredObject[] = [];
  const builder = new DesiredBuilder(secrets, memo);
  for (let i = 0; i < objects.length; i++) builder.add(objects[i], out);
  return out;
}

/** `buildDesired` an object at a time (planning builds them between turns of the event loop). */
export class DesiredBuilder {
  /** The containers `setAt` copied for the object being built (one list per builder, emptied for each object). */
  private readonly copied = new Scratch<object>();
  /**
   * One token per named target (tokens are values: never modified), so thousands of references
   * to the same few objects share them.
   */
  private readonly tokens = new Map<KindDef, Map<string, RefToken>>();

  constructor(private readonly secrets: Map<string, ResolvedSecret>, private readonly memo?: DesiredMemo) {}

  private tokenFor(target: KindDef, name: string): RefToken {
    let byName = this.tokens.get(target);
    if (!byName) this.tokens.set(target, (byName = new Map()));
    let t = byName.get(name);
    if (!t) byName.set(name, (t = { $ref: `${target.manifestKind}/${name}` }));
    return t;
  }

  /** A valid manifest object's desired object, then its children's, appended to `out`. */
  add(o: ManifestObject, out: DesiredObject[]): void {
    const { secrets, memo } = this;
    const known = memo?.get(o);
    if (known && secretValues(o).every((s) => secrets.get(`${o.identity}#${s.path.join('.')}`)?.fingerprint === known.fp[s.path.join('.')])) {
      out.push(known);
      for (let i = 0; i < o.children.length; i++) this.add(o.children[i], out);
      return;
    }
    // Copied without metadata (built, not deleted from: a delete turns an object into a slow hash map).
    const body: Body = {};
    for (const k in o.body) if (k !== 'metadata') body[k] = o.body[k];
    const copied = this.copied;
    copied.clear(); // the containers copied for this object only
    const userMetadata = typeof o.body.metadata === 'string' ? o.body.metadata : undefined;
    const refs = refsOf(o);
    for (let i = 0; i < refs.length; i++) {
      const r = refs[i];
      if (!isName(r.def, r.value)) continue;
      setAt(body, r.path, this.tokenFor(namedTarget(r.def)!, r.value), copied);
    }
    let fp: Record<string, string> = NO_SECRETS;
    let formerFp: Record<string, Record<string, string>> | undefined;
    const secretsOf = secretValues(o);
    for (let i = 0; i < secretsOf.length; i++) {
      const s = secretsOf[i];
      if (fp === NO_SECRETS) fp = {};
      const path = s.path.join('.');
      const resolved = secrets.get(`${o.identity}#${path}`);
      const token: SecretToken = {
        $secret: resolved?.source ?? (isSecretRef(s.value) ? s.value : { literal: '' }),
        fingerprint: resolved?.fingerprint ?? null,
      };
      if (resolved) fp[path] = resolved.fingerprint;
      for (const id in resolved?.formerly) ((formerFp ??= {})[id] ??= {})[path] = resolved.formerly[id];
      setAt(body, s.path, token, copied);
    }
    const d = new Desired(o, body, userMetadata, fp);
    if (formerFp) d.formerFp = formerFp;
    memo?.set(o, d);
    out.push(d);
    for (let i = 0; i < o.children.length; i++) this.add(o.children[i], out);
  }
}
