import { stringify } from 'yaml';
import type { Body, KindRuntimeConfig } from '../../kinds/types.js';
import { manifestKinds, namedTarget } from '../manifests/schema.js';
import { refValues } from '../manifests/validate.js';
import { DEFAULT_CONFIG, normalize, normalizeModule, same } from '../plan/normalize.js';
import { observeLists, type ObservedLists } from '../plan/observed.js';
import { isSecretToken } from '../plan/tokens.js';
import type { ObservedObject } from '../plan/state.js';
import { uniqueName } from './names.js';

/**
 * Live state → manifests, one file per kind (`https-edge.yaml`, routes nested in their edge),
 * documents sorted by name. Only what a person would write is kept: service defaults, derived
 * fields and empty optional strings are left out (the same `defaults` / `derived` the differ
 * reads from the kind descriptions), references become names, secrets become `{env: NAME}`, and
 * the user's metadata comes back as written, without the ownership marker.
 */
export interface ExportOptions {
  stack: string;
  /** Also export objects no stack manages, so a team can adopt an existing account. */
  all?: boolean;
  /** The deployment settings defaults depend on (the session cookie prefix): defaults are left out as it fills them. */
  config?: KindRuntimeConfig;
}

/** One file of manifests; `objects` counts every object in it, routes inside their edge too. */
export interface ExportedFile { name: string; text: string; objects: number }

export interface ExportResult {
  files: ExportedFile[];
  /** Environment variables the manifests expect secrets in. */
  secrets: { env: string; identity: string; path: string }[];
  warnings: string[];
  /** What else the account holds: the stacks with objects (other than this one) and how many top-level objects no stack manages. */
  elsewhere: { stacks: string[]; unmanaged: number };
}

interface Picked { o: ObservedObject; name: string; identity: string; field?: string; children: Picked[] }

const isObject = (v: unknown): v is Body => !!v && typeof v === 'object' && !Array.isArray(v);

function kebab(s: string): string {
  return s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2').toLowerCase();
}

export function envName(identity: string, path: string): string {
  return `EDGEPLANE_SECRET_${`${identity}_${path}`.replace(/[^A-Za-z0-9]+/g, '_').toUpperCase()}`.replace(/_+$/, '');
}

/** Every leaf path of a plain JSON object (arrays and secret tokens are leaves). */
function leafPaths(v: Body, at: string[] = []): string[][] {
  const out: string[][] = [];
  for (const [k, x] of Object.entries(v)) {
    if (isObject(x) && !isSecretToken(x) && Object.keys(x).length) out.push(...leafPaths(x, [...at, k]));
    else out.push([...at, k]);
  }
  return out;
}

function without(v: Body, path: string[]): Body {
  const copy = structuredClone(v);
  let holder = copy;
  for (const seg of path.slice(0, -1)) holder = holder[seg] as Body;
  delete holder[path[path.length - 1]];
  return copy;
}

/**
 * Leaves out every value the normalisation table says is implied: a leaf goes when the body
 * normalises to the same thing without it (service defaults, config defaults such as the cookie
 * prefix, derived fields, empty optional strings). The differ reads the same table, so the result
 * plans to no changes. Required fields stay, even when they equal a default.
 */
function minimal(body: Body, norm: (b: Body) => unknown, required: string[]): Body {
  let cur = body;
  const target = norm(body);
  for (const path of leafPaths(body)) {
    if (path.length === 1 && required.includes(path[0])) continue;
    const next = without(cur, path);
    if (same(norm(next), target)) cur = next;
  }
  return cur;
}

/** Whether `path` is a property of the request schema (a secret the user supplies, not one the service generates). */
function inSchema(schema: Record<string, unknown>, path: string[]): boolean {
  let s: Record<string, unknown> | undefined = schema;
  for (const seg of path) {
    s = (s?.properties as Record<string, Record<string, unknown>> | undefined)?.[seg];
    if (!s) return false;
  }
  return true;
}

/**
 * Secrets as `{env: NAME}`: where the marker says one is set (tokens in the observed body), or —
 * for unmanaged objects, which have no marker — at each write-only path of the request schema
 * whose holder exists.
 */
function secretRefs(body: Body, paths: string[], schema: Record<string, unknown>, base: string[], identity: string, owned: boolean, found: ExportResult['secrets']): void {
  for (const p of paths) {
    const segs = p.split('.');
    const walk = (holder: Body, i: number, at: string[]) => {
      const seg = segs[i];
      if (i === segs.length - 1) {
        if (!inSchema(schema, [...at, seg]) || (owned && !isSecretToken(holder[seg]))) return;
        const path = [...base, ...at, seg].join('.');
        const env = envName(identity, path);
        holder[seg] = { env };
        found.push({ env, identity, path });
        return;
      }
      for (const key of seg === '*' ? Object.keys(holder) : [seg]) if (isObject(holder[key])) walk(holder[key] as Body, i + 1, [...at, key]);
    };
    walk(body, 0, []);
  }
}

const byMarkerThenId = (a: ObservedObject, b: ObservedObject) => Number(!a.marker) - Number(!b.marker) || a.id.localeCompare(b.id);

/**
 * Names first, so references can be written by name: owned objects keep their manifest names,
 * unmanaged ones get names that do not collide with them. Children are indexed by parent once.
 */
function pickObjects(observed: ObservedObject[], wanted: (o: ObservedObject) => boolean): { top: Map<string, Picked[]>; names: Map<string, string> } {
  const names = new Map<string, string>();
  const top = new Map<string, Picked[]>();
  const children = new Map<string, ObservedObject[]>();
  for (const o of observed) if (o.parentId && wanted(o)) children.set(o.parentId, [...(children.get(o.parentId) ?? []), o]);
  for (const kind of manifestKinds()) {
    const used = new Set<string>();
    const picked: Picked[] = [];
    for (const o of observed.filter((x) => x.kind === kind && !x.parentId && wanted(x)).sort(byMarkerThenId)) {
      const name = uniqueName(o, used);
      const p: Picked = { o, name, identity: `${kind.manifestKind}/${name}`, children: [] };
      names.set(o.id, name);
      for (const [field, childKind] of Object.entries(kind.embeds ?? {})) {
        const usedChild = new Set<string>();
        for (const c of (children.get(o.id) ?? []).filter((x) => x.kind.name === childKind).sort(byMarkerThenId)) {
          const childName = uniqueName(c, usedChild);
          p.children.push({ o: c, name: childName, identity: `${p.identity}/${field}/${childName}`, field, children: [] });
        }
      }
      picked.push(p);
    }
    top.set(kind.name, picked.sort((a, b) => a.name.localeCompare(b.name)));
  }
  return { top, names };
}

/** One picked object (and its children) as a manifest document. */
class DocumentWriter {
  readonly secrets: ExportResult['secrets'] = [];
  readonly warnings: string[] = [];
  private readonly byId: Map<string, ObservedObject>;

  constructor(private readonly names: Map<string, string>, observed: ObservedObject[], private readonly config: KindRuntimeConfig = DEFAULT_CONFIG) {
    this.byId = new Map(observed.map((o) => [o.id, o]));
  }

  private refName(value: string, where: string): string {
    const hit = this.names.get(value);
    if (hit) return hit;
    const other = this.byId.get(value);
    if (other) {
      const whose = other.owner.type === 'stack' ? `owned by stack "${other.owner.stack}"` : 'not managed by any stack (export --all includes it)';
      this.warnings.push(`${where}: refers to ${other.kind.title} ${value}, which is ${whose}; kept as a raw id`);
    }
    return value;
  }

  doc(p: Picked, topLevel: boolean): Body {
    const { o } = p;
    const kind = o.kind;
    const owned = o.owner.type === 'this';
    const body: Body = structuredClone(o.body);
    for (const r of refValues({ kind, body })) {
      if (!namedTarget(r.def)) continue;
      let holder = body as Record<string | number, unknown>;
      for (const seg of r.path.slice(0, -1)) holder = holder[seg] as Record<string | number, unknown>;
      holder[r.path[r.path.length - 1]] = this.refName(r.value, p.identity);
    }
    const out: Body = topLevel ? { kind: kind.manifestKind, name: p.name } : { name: p.name };
    if (o.marker?.protect) out.protect = true;
    const order = kind.responseOrder.filter((f) => f in kind.fields);
    const plain: Body = {};
    for (const f of [...order, ...Object.keys(kind.fields).filter((f) => !order.includes(f))]) {
      if (f !== 'metadata' && f in body) plain[f] = body[f];
    }
    const id = (x: string) => x;
    Object.assign(out, minimal(plain, (b) => normalize(kind, b, id, this.config).fields, kind.required ?? []));
    const user = owned ? o.userMetadata : o.metadata;
    if (user) out.metadata = user;
    secretRefs(out, kind.writeOnly ?? [], { properties: kind.fields }, [], p.identity, owned, this.secrets);
    for (const m of kind.modules ?? []) {
      if (!isObject(body[m.name])) continue;
      const mod = minimal(body[m.name] as Body, (b) => normalizeModule(m, b, id, this.config), (m.request.required as string[]) ?? []);
      secretRefs(mod, m.writeOnly ?? [], m.request, [m.name], p.identity, owned, this.secrets);
      out[m.name] = mod;
    }
    for (const field of Object.keys(kind.embeds ?? {})) {
      const kids = p.children.filter((c) => c.field === field).sort((a, b) => a.name.localeCompare(b.name));
      if (kids.length) out[field] = kids.map((c) => this.doc(c, false));
    }
    return out;
  }
}

export function exportState(lists: ObservedLists, opts: ExportOptions): ExportResult {
  const observed = observeLists(lists, opts.stack);
  const wanted = (o: ObservedObject) => o.owner.type === 'this' || (!!opts.all && o.owner.type === 'unmanaged');
  const { top, names } = pickObjects(observed, wanted);
  const writer = new DocumentWriter(names, observed, opts.config);
  const files: ExportedFile[] = [];
  for (const kind of manifestKinds()) {
    const picked = top.get(kind.name) ?? [];
    if (!picked.length) continue;
    const docs = picked.map((p) => stringify(writer.doc(p, true), { lineWidth: 0, blockQuote: 'literal' }));
    files.push({ name: `${kebab(kind.manifestKind!)}.yaml`, text: docs.join('---\n'), objects: picked.reduce((n, p) => n + 1 + p.children.length, 0) });
  }
  const stacks = [...new Set(observed.flatMap((o) => (o.owner.type === 'stack' ? [o.owner.stack] : [])))].sort();
  const unmanaged = observed.filter((o) => o.owner.type === 'unmanaged' && !o.parentId).length;
  return { files, secrets: writer.secrets, warnings: writer.warnings, elsewhere: { stacks, unmanaged } };
}
