import { createHash } from 'node:crypto';
import { Document, isScalar, stringify, visit } from 'yaml';
import { moduleCheckForm } from '../../kinds/check.js';
import type { Body, KindRuntimeConfig, ModuleDef } from '../../kinds/types.js';
import { manifestKinds, namedTarget } from '../manifests/schema.js';
import { refValues } from '../manifests/object-values.js';
import { DEFAULT_CONFIG, normalize, normalizeModule, same } from '../plan/normalize.js';
import { observeLists, type ObservedLists } from '../plan/observed.js';
import { isSecretToken } from '../plan/tokens.js';
import type { ObservedObject } from '../plan/state.js';
import { keptCopy, referencedIds } from '../plan/duplicates.js';
import { uniqueName } from './names.js';
// A `${` of a live value is written `$${`: read back, the manifests substitute variables (docs/manifests.md, "Environments").
import { escapeText } from '../manifests/variables.js';
import { writeBackVariables, type ExportedVariable, type WriteBackOptions } from './variables.js';

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
  /**
   * A comment line each document starts with: the `yaml-language-server` modeline naming the
   * manifest schema (`schemaModeline`), so an editor checks and completes the files written.
   */
  header?: string;
  /** Values written back as variables (`--as-variable`, `--env`): see `writeBackVariables`. */
  variables?: WriteBackOptions;
}

/** One file of manifests; `objects` counts every object in it, routes inside their edge too. */
export interface ExportedFile { name: string; text: string; objects: number }

export interface ExportResult {
  files: ExportedFile[];
  /** The file names of the kinds with nothing to export (an earlier export's file of one must not outlive it). */
  emptyKindFiles: string[];
  /** Environment variables the manifests expect secrets in. */
  secrets: { env: string; identity: string; path: string }[];
  warnings: string[];
  /** What else the account holds: the stacks with objects (other than this one) and how many top-level objects no stack manages. */
  elsewhere: { stacks: string[]; unmanaged: number };
  /** The variables the manifests refer to (with `variables`): those new to the stack file to add to it. */
  variables: ExportedVariable[];
}

interface Picked { o: ObservedObject; name: string; identity: string; field?: string; children: Picked[] }

const isObject = (v: unknown): v is Body => !!v && typeof v === 'object' && !Array.isArray(v);

function kebab(s: string): string {
  return s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2').toLowerCase();
}

/**
 * The environment variable a secret is read from: the identity and path in upper case, every run
 * of other characters as `_`. Two secrets can read alike so (`/a.b` and `/a-b`): an export gives
 * each of those a suffix of its own (`uniqueEnvNames`), so no two share a variable.
 */
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
function secretRefs(body: Body, paths: string[], schema: Record<string, unknown>, base: string[], identity: string, owned: boolean, found: SecretRef[]): void {
  for (const p of paths) {
    const segs = p.split('.');
    const walk = (holder: Body, i: number, at: string[]) => {
      const seg = segs[i];
      if (i === segs.length - 1) {
        if (!inSchema(schema, [...at, seg]) || (owned && !isSecretToken(holder[seg]))) return;
        const path = [...base, ...at, seg].join('.');
        const ref = { env: envName(identity, path) };
        holder[seg] = ref;
        found.push({ identity, path, ref, holder, key: seg });
        return;
      }
      for (const key of seg === '*' ? Object.keys(holder) : [seg]) if (isObject(holder[key])) walk(holder[key] as Body, i + 1, [...at, key]);
    };
    walk(body, 0, []);
  }
}

/** A secret reference an export wrote: where it sits, so that its name can still change. */
interface SecretRef { identity: string; path: string; ref: { env: string }; holder: Body; key: string }

/** Byte order: the same files on every machine (`localeCompare` follows the locale). */
const byBytes = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byMarkerThenId = (a: ObservedObject, b: ObservedObject) => Number(!a.marker) - Number(!b.marker) || byBytes(a.id, b.id);

/**
 * Names first, so references can be written by name: owned objects keep their manifest names,
 * unmanaged ones get names that do not collide with them. Children are indexed by parent once.
 */
function pickObjects(observed: ObservedObject[], wanted: (o: ObservedObject) => boolean, hints: Map<string, string | undefined>): { top: Map<string, Picked[]>; names: Map<string, string> } {
  const names = new Map<string, string>();
  const top = new Map<string, Picked[]>();
  const children = new Map<string, ObservedObject[]>();
  for (const o of observed) if (o.parentId && wanted(o)) children.set(o.parentId, [...(children.get(o.parentId) ?? []), o]);
  for (const kind of manifestKinds()) {
    const used = new Set<string>();
    const picked: Picked[] = [];
    // Marked objects keep their names first, then edges named by their routes' markers (another
    // edge taking that name would be adopted in its place, and the routes moved to a new one).
    const rank = (o: ObservedObject) => (o.marker ? 0 : hints.get(o.id) ? 1 : 2);
    for (const o of observed.filter((x) => x.kind === kind && !x.parentId && wanted(x)).sort((a, b) => rank(a) - rank(b) || byBytes(a.id, b.id))) {
      const name = uniqueName(o, used, hints.get(o.id));
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
    top.set(kind.name, picked.sort((a, b) => byBytes(a.name, b.name)));
  }
  return { top, names };
}

/** One picked object (and its children) as a manifest document. */
class DocumentWriter {
  readonly secrets: SecretRef[] = [];
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
      const from = this.secrets.length;
      secretRefs(mod, m.writeOnly ?? [], m.request, [m.name], p.identity, owned, this.secrets);
      if (!owned) this.dropRefused(m, mod, from);
      out[m.name] = mod;
    }
    for (const field of Object.keys(kind.embeds ?? {})) {
      const kids = p.children.filter((c) => c.field === field).sort((a, b) => byBytes(a.name, b.name));
      if (kids.length) out[field] = kids.map((c) => this.doc(c, false));
    }
    return out;
  }

  /**
   * An unmanaged object has no marker saying which secrets are set, so a reference is written at
   * every secret field whose holder exists; those the module's own check refuses (a Google login
   * on the managed app takes no client secret, an SNS webhook no secret) are taken out again:
   * the export must validate as it is written.
   */
  private dropRefused(m: ModuleDef, mod: Body, from: number) {
    if (!m.check || this.secrets.length === from) return;
    const refusals = () => {
      let n = 0;
      m.check!(moduleCheckForm(m, mod), { report: () => void n++ });
      return n;
    };
    for (let i = this.secrets.length - 1; i >= from; i--) {
      const s = this.secrets[i];
      const before = refusals();
      delete s.holder[s.key];
      if (refusals() < before) this.secrets.splice(i, 1);
      else s.holder[s.key] = s.ref;
    }
  }

  /** Secrets whose variable names read alike get a suffix each, from what they are (stable between exports). */
  uniqueEnvNames() {
    const byName = new Map<string, SecretRef[]>();
    for (const s of this.secrets) byName.set(s.ref.env, [...(byName.get(s.ref.env) ?? []), s]);
    for (const [env, refs] of byName) {
      if (refs.length < 2) continue;
      for (const s of refs) s.ref.env = `${env}_${createHash('sha256').update(`${s.identity}#${s.path}`).digest('hex').slice(0, 6).toUpperCase()}`;
    }
  }
}

/**
 * Objects of the stack that carry the same identity (two applies at once, an interrupted one):
 * the one the planner keeps is exported — the first that something refers to, else the first
 * listed — and the others are left out with a warning; the next apply deletes them. Exporting
 * them all made names of their own for them (`fb-2`), and the next plan churned.
 */
function duplicatesLeftOut(observed: ObservedObject[], stack: string, warnings: string[]): Set<string> {
  const byIdentity = new Map<string, ObservedObject[]>();
  for (const o of observed) {
    if (o.owner.type !== 'this' || !o.marker) continue;
    const key = `${o.parentId ?? ''}\0${o.marker.id}`;
    byIdentity.set(key, [...(byIdentity.get(key) ?? []), o]);
  }
  const out = new Set<string>();
  let referenced: Set<string> | undefined;
  for (const same of byIdentity.values()) {
    if (same.length < 2) continue;
    const kept = keptCopy(same, (id) => (referenced ??= referencedIds(observed)).has(id))!;
    const others = same.filter((o) => o !== kept);
    for (const o of others) out.add(o.id);
    warnings.push(`${kept.marker!.id}: ${same.length} live objects of stack "${stack}" carry this identity; exported ${kept.id}, the one plan keeps (the next apply deletes ${others.map((o) => o.id).join(', ')})`);
  }
  return out;
}

/**
 * Edges the stack's routes sit in that carry no marker themselves (the edge's metadata was
 * cleared), by id, with the name their routes' markers give them (`HTTPSEdge/web/routes/root` →
 * `web`): exported under it, the routes keep their identities and plan with `--adopt` takes the
 * edge over again (under any other name it would delete and re-create the routes). Such an edge is
 * exported with its routes, and with `--all` too, where it would be anyway; a warning says so.
 */
function unmarkedParents(observed: ObservedObject[], wanted: (o: ObservedObject) => boolean, stack: string, warnings: string[]): Map<string, string | undefined> {
  const byId = new Map(observed.map((o) => [o.id, o]));
  const out = new Map<string, string | undefined>();
  for (const o of observed) {
    // Only the stack's own children name their parent: an unmanaged route beside them says nothing.
    if (!o.parentId || o.owner.type !== 'this' || !wanted(o) || out.has(o.parentId)) continue;
    const parent = byId.get(o.parentId);
    if (!parent || parent.owner.type !== 'unmanaged') continue;
    const parts = o.marker?.id.split('/') ?? [];
    out.set(parent.id, parts.length >= 4 ? parts[parts.length - 3] : undefined);
    warnings.push(`${parent.kind.title} ${parent.id} holds objects of stack "${stack}" but no stack manages it (its marker is gone): exported with them; plan with --adopt takes it over`);
  }
  return out;
}

/** YAML of a document written with variables: each `{var: NAME}` on its field's line, as a person writes it. */
function withVarRefsInline(d: Body): string {
  const doc = new Document(d);
  visit(doc, {
    Map(_, node) {
      if (node.items.length === 1 && isScalar(node.items[0].key) && node.items[0].key.value === 'var') node.flow = true;
    },
  });
  return doc.toString({ lineWidth: 0, blockQuote: 'literal' });
}

export function exportState(lists: ObservedLists, opts: ExportOptions): ExportResult {
  const observed = observeLists(lists, opts.stack);
  const warnings: string[] = [];
  const leftOut = duplicatesLeftOut(observed, opts.stack, warnings);
  const stackOrAll = (o: ObservedObject) => !leftOut.has(o.id) && (o.owner.type === 'this' || (!!opts.all && o.owner.type === 'unmanaged'));
  const parents = unmarkedParents(observed, stackOrAll, opts.stack, warnings);
  const wanted = (o: ObservedObject) => stackOrAll(o) || parents.has(o.id);
  const { top, names } = pickObjects(observed, wanted, parents);
  const writer = new DocumentWriter(names, observed, opts.config);
  const built = manifestKinds().map((kind) => {
    const picked = top.get(kind.name) ?? [];
    return { kind, picked, docs: picked.map((p) => writer.doc(p, true)) };
  });
  writer.uniqueEnvNames();
  // Written back as variables across every kind at once (one variable, one value), escaped as below.
  const written = opts.variables ? writeBackVariables(built.flatMap((b) => b.docs), opts.variables) : undefined;
  if (written) {
    let i = 0;
    for (const b of built) b.docs = b.docs.map(() => written.docs[i++] as Body);
    warnings.push(...written.warnings);
  }
  const files: ExportedFile[] = [];
  const emptyKindFiles: string[] = [];
  for (const { kind, picked, docs } of built) {
    if (!picked.length) {
      emptyKindFiles.push(`${kebab(kind.manifestKind!)}.yaml`);
      continue;
    }
    // The modeline is read per document (a multi-document file gets it on each).
    const texts = docs.map((d) => (opts.header ? opts.header + '\n' : '') + (written ? withVarRefsInline(d) : stringify(escapeText(d), { lineWidth: 0, blockQuote: 'literal' })));
    files.push({ name: `${kebab(kind.manifestKind!)}.yaml`, text: texts.join('---\n'), objects: picked.reduce((n, p) => n + 1 + p.children.length, 0) });
  }
  const stacks = [...new Set(observed.flatMap((o) => (o.owner.type === 'stack' ? [o.owner.stack] : [])))].sort();
  const unmanaged = observed.filter((o) => o.owner.type === 'unmanaged' && !o.parentId).length;
  const secrets = writer.secrets.map((x) => ({ env: x.ref.env, identity: x.identity, path: x.path }));
  return { files, emptyKindFiles, secrets, warnings: [...warnings, ...writer.warnings], elsewhere: { stacks, unmanaged }, variables: written?.variables ?? [] };
}
