import { createHash } from 'node:crypto';
import { kindByName } from '../../kinds/registry.js';
import type { Body, KindDef, ModuleDef, RefDef } from '../../kinds/types.js';
import { canonicalJson } from '../../util/canonical-json.js';
import { etagOf, listedEtag, type ListedEtags } from '../../client/api-client.js';
import { manifestKinds } from '../manifests/schema.js';
import { decodeMetadata, type Marker } from '../ownership/marker.js';
import type { ObservedObject, Owner } from './state.js';
import type { SecretToken } from './tokens.js';

/** API list bodies by list key (`certificate_authorities`, `backends`, `https_edges`): what `plan` reads. */
export type ObservedLists = Record<string, Body[]>;

function refBack(r: RefDef, out: unknown): unknown {
  if (r.many) return Array.isArray(out) ? out.map((x) => (x && typeof x === 'object' ? (x as { id: string }).id : x)) : [];
  return out && typeof out === 'object' ? (out as { id: string }).id : undefined;
}

/** A request field of a kind or module, with the ref whose response field it is read back from (metadata is kept apart: not listed). */
interface RequestField { name: string; ref: RefDef | undefined }

/** Request fields of each kind and module, found once per definition. */
const requestFieldsCache = new WeakMap<object, RequestField[]>();
function requestFields(def: KindDef | ModuleDef, names: string[]): RequestField[] {
  const out: RequestField[] = [];
  for (const f of names) if (f !== 'metadata') out.push({ name: f, ref: def.refs?.find((x) => x.field === f && x.outField) });
  requestFieldsCache.set(def, out);
  return out;
}

function toRequest(fields: RequestField[], resp: Body): Body {
  const out: Body = {};
  for (let i = 0; i < fields.length; i++) {
    const { name: f, ref: r } = fields[i];
    if (r) {
      const v = refBack(r, resp[r.outField!]);
      if (v !== undefined) out[f] = v;
    } else if (f in resp) out[f] = resp[f];
  }
  return out;
}

/** A response's module back in request form: Refs → ids, derived and unknown fields dropped. */
function moduleToRequest(m: ModuleDef, resp: Body): Body {
  return toRequest(requestFieldsCache.get(m) ?? requestFields(m, Object.keys((m.request.properties as object) ?? {})), resp);
}

/** A response in request form: the shape the manifests are written in, so both sides compare (metadata apart). */
export function responseToRequest(kind: KindDef, resp: Body): Body {
  const out = toRequest(requestFieldsCache.get(kind) ?? requestFields(kind, Object.keys(kind.fields)), resp);
  const modules = kind.modules;
  if (modules) {
    for (let i = 0; i < modules.length; i++) {
      const m = modules[i];
      const v = resp[m.name];
      if (v && typeof v === 'object') out[m.name] = moduleToRequest(m, v as Body);
    }
  }
  return out;
}

/**
 * What a plan was made from, as a short hash: the object's id, parent, fields and modules in
 * request form (secrets by their marker fingerprints) and its stored metadata. A saved plan records
 * it for every object it touches, and apply refuses the plan when any no longer matches. Fields
 * the plan never reads (`created_at`, `uri`, children listed inside) are not in it, so the
 * response itself need not be kept: a plan holds thousands.
 */
export function fingerprintObserved(o: Pick<ObservedObject, 'id' | 'parentId' | 'body' | 'metadata'>): string {
  const what = { id: o.id, parent: o.parentId ?? null, body: o.body, metadata: o.metadata ?? null };
  return createHash('sha256').update(canonicalJson(what)).digest('base64url').slice(0, 16);
}

/** Secrets are never returned: their slots are filled from the marker's fingerprints. */
function withSecretTokens(body: Body, fp: Record<string, string> | undefined): Body {
  if (!fp || typeof fp !== 'object') return body; // none (or not a map: a marker this version did not write)
  for (const path in fp) {
    const fingerprint = fp[path];
    const segs = path.split('.');
    let holder = body as Record<string, unknown>;
    let ok = true;
    for (const seg of segs.slice(0, -1)) {
      if (!holder[seg] || typeof holder[seg] !== 'object') { ok = false; break; }
      holder = holder[seg] as Record<string, unknown>;
    }
    if (ok) holder[segs[segs.length - 1]] = { $secret: 'stored', fingerprint } satisfies SecretToken;
  }
  return body;
}

/** One object as read; its fingerprint is computed on first read (only objects a plan touches need one). */
class Observed implements ObservedObject {
  #fingerprint?: string;
  etag?: string;

  constructor(
    public kind: KindDef, public id: string, public parentId: string | undefined, public body: Body,
    public metadata: string | undefined, public marker: Marker | undefined, public userMetadata: string | undefined,
    public owner: Owner,
  ) {}

  get fingerprint(): string {
    return (this.#fingerprint ??= fingerprintObserved(this));
  }
}

/** One response → an observed object, classified by its marker. `etags`: its page's (else the response's own, `etagOf`). */
export function observeOne(kind: KindDef, resp: Body, stack: string, parentId?: string, etags?: ListedEtags): ObservedObject {
  const { marker, user } = decodeMetadata(resp.metadata);
  const owner: Owner = !marker ? { type: 'unmanaged' } : marker.stack === stack ? THIS : { type: 'stack', stack: marker.stack };
  const body = withSecretTokens(responseToRequest(kind, resp), marker?.fp);
  const o = new Observed(kind, resp.id as string, parentId, body, resp.metadata as string | undefined, marker, user, owner);
  const etag = etags ? listedEtag(etags, resp.id) : etagOf(resp);
  if (etag !== undefined) o.etag = etag;
  return o;
}

const THIS: Owner = Object.freeze({ type: 'this' });

/**
 * One listed object and the children listed inside it (routes inside an edge), parent first,
 * appended to `out` (a new list by default). `etags`: its page's, when the page was not given to `list`.
 */
export function observeItem(kind: KindDef, resp: Body, stack: string, out: ObservedObject[] = [], etags?: ListedEtags): ObservedObject[] {
  out.push(observeOne(kind, resp, stack, undefined, etags));
  for (const field in kind.embeds) {
    const children = resp[field] as Body[] | undefined;
    if (!children) continue;
    const childKind = kindByName(kind.embeds[field]);
    for (let i = 0; i < children.length; i++) out.push(observeOne(childKind, children[i], stack, resp.id as string, etags));
  }
  return out;
}

/** Every object of the lists, children (routes inside edges) flattened after their parent. */
export function observeLists(lists: ObservedLists, stack: string): ObservedObject[] {
  const out: ObservedObject[] = [];
  for (const kind of manifestKinds()) {
    for (const resp of lists[kind.listKey!] ?? []) observeItem(kind, resp, stack, out);
  }
  return out;
}
