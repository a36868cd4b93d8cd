import { createHash } from 'node:crypto';
import { collectionPath, objectPath } from '../../contract/paths.js';
import { responseSchema } from '../../kinds/response-schemas.js';
import { withoutPaths } from '../../kinds/paths.js';
import { FOREIGN_PATHS, FOREIGN_PREFIX_PATHS, KINDS, findKind, kindByName } from '../../kinds/registry.js';
import type { Body, JSONSchema, KindDef, ModuleDef, RefDef } from '../../kinds/types.js';
import { inJsonbOrder, jsonbKeyOrder, type ObjectRow, type StoredView } from '../../store/objects.js';
import { packageVersion } from '../../util/package-version.js';
import { serviceSerializer } from '../precompiled-serializers.js';

/**
 * Where a response body carries its object's ETag: a property JSON leaves out, so the body sent is
 * the spec's, and the route sets the `ETag` header from it.
 */
export const ETAG: unique symbol = Symbol('etag');

export function etagOf(row: Pick<ObjectRow, 'version'>): string {
  return `"${row.version}"`;
}

/** The ETag of a response body, if it is an object's. */
export function etagOfBody(body: unknown): string | undefined {
  return body && typeof body === 'object' ? (body as { [ETAG]?: string })[ETAG] : undefined;
}

/**
 * Whether an `If-Match` value (`*`, or a list of entity tags) names `etag`. Strong comparison:
 * a weak tag (`W/"3"`) never matches, as RFC 9110 has it for If-Match.
 */
export function matchesIfMatch(header: string, etag: string): boolean {
  const value = header.trim();
  if (value === '*') return true;
  return value.split(',').some((t) => t.trim() === etag);
}


/**
 * A `Ref` to an object of `kindName`. Refs never point at a child kind, so no parent is needed. An
 * id whose prefix names a kind this service does not store (a route's `bkdhr_` backend) gets that
 * kind's path.
 */
function ref(kindName: string, id: string, base: string) {
  const kind = findKind(kindName);
  const prefix = id.slice(0, id.indexOf('_'));
  const path = kind && kind.idPrefix === prefix ? kind.path : FOREIGN_PREFIX_PATHS[prefix] ?? (kind ? kind.path : FOREIGN_PATHS[kindName]);
  return { id, uri: `${base}${path}/${id}` };
}

function refOut(r: RefDef, value: unknown, base: string): unknown {
  if (r.many) {
    const refs = [];
    for (const id of (value as string[] | undefined) ?? []) refs.push(ref(r.kind, id, base));
    return refs;
  }
  return typeof value === 'string' ? ref(r.kind, value, base) : null;
}

/**
 * What a description says about each response field, worked out once per kind and per module (a
 * list of 20 edges shapes 120 objects and 600 modules per request).
 */
interface FieldPlan {
  key: string;
  /** The reference that turns the stored id(s) into Refs under its `outField`. */
  ref?: RefDef;
  /** The field's schema when it declares nested properties, whose order the response follows. */
  nested?: JSONSchema;
}

interface ModulePlan {
  writeOnly: string[];
  /** In `responseOrder`; absent: the stored keys, in their order, looked up in `byKey`. */
  ordered?: FieldPlan[];
  byKey: Map<string, FieldPlan>;
}

interface KindPlan {
  /** Response fields in order, write-only ones left out. */
  fields: FieldPlan[];
  embeds: [field: string, childKind: KindDef][];
}

const modulePlans = new WeakMap<ModuleDef, ModulePlan>();
const kindPlans = new WeakMap<KindDef, KindPlan>();

function fieldPlan(key: string, refs: RefDef[] | undefined, schema: JSONSchema | undefined): FieldPlan {
  const ref = refs?.find((r) => r.field === key && r.outField);
  return { key, ...(ref ? { ref } : {}), ...(schema?.properties ? { nested: schema } : {}) };
}

function modulePlan(mod: ModuleDef): ModulePlan {
  let plan = modulePlans.get(mod);
  if (!plan) {
    const properties = (mod.request.properties ?? {}) as Record<string, JSONSchema>;
    const byKey = new Map<string, FieldPlan>();
    const planOf = (key: string) => byKey.get(key) ?? byKey.set(key, fieldPlan(key, mod.refs, properties[key])).get(key)!;
    for (const key of [...Object.keys(properties), ...(mod.responseOrder ?? [])]) planOf(key);
    plan = { writeOnly: mod.writeOnly ?? [], byKey, ...(mod.responseOrder ? { ordered: mod.responseOrder.map(planOf) } : {}) };
    modulePlans.set(mod, plan);
  }
  return plan;
}

function kindPlan(kind: KindDef): KindPlan {
  let plan = kindPlans.get(kind);
  if (!plan) {
    plan = {
      fields: kind.responseOrder.filter((f) => !kind.writeOnly?.includes(f)).map((f) => fieldPlan(f, kind.refs, undefined)),
      embeds: Object.entries(kind.embeds ?? {}).map(([field, child]) => [field, kindByName(child)]),
    };
    kindPlans.set(kind, plan);
  }
  return plan;
}

/** Response form of a module: refs become Refs, secrets are left out. */
export function moduleToResponse(mod: ModuleDef, stored: Body, base: string): Body {
  const plan = modulePlan(mod);
  const visible = plan.writeOnly.length ? withoutPaths(stored, plan.writeOnly) : stored;
  const out: Body = {};
  if (plan.ordered) for (const f of plan.ordered) putField(out, f, visible, base);
  else for (const key of Object.keys(visible)) putField(out, plan.byKey.get(key) ?? { key }, visible, base);
  return out;
}

function putField(out: Body, f: FieldPlan, visible: Body, base: string): void {
  if (f.ref) out[f.ref.outField!] = refOut(f.ref, visible[f.key], base);
  else if (f.key in visible) out[f.key] = f.nested ? inSchemaOrder(visible[f.key], f.nested) : visible[f.key];
}

/**
 * jsonb stores object keys in its own order; nested objects (an OAuth provider's settings) are
 * returned with their keys in the order the request schema declares them.
 */
function inSchemaOrder(value: unknown, schema: JSONSchema | undefined): unknown {
  const props = schema?.properties as Record<string, JSONSchema> | undefined;
  if (!props || !value || typeof value !== 'object' || Array.isArray(value)) return value;
  const v = value as Body;
  const keys = [...Object.keys(props).filter((k) => k in v), ...Object.keys(v).filter((k) => !(k in props))];
  return Object.fromEntries(keys.map((k) => [k, inSchemaOrder(v[k], props[k])]));
}

/**
 * Response form of an object: `id`, `uri`, `created_at`, the parent id, the plain fields in the
 * kind's order (absent ones stay absent), every module slot (null when not configured) and the
 * embedded children in creation order.
 */
export function toResponse(kind: KindDef, row: ObjectRow, base: string, children?: Map<string, ObjectRow[]>): Body {
  const plan = kindPlan(kind);
  const out: Body = {};
  if (kind.parent) out[kind.parent.field] = row.parent_id;
  out.id = row.id;
  out.uri = base + objectPath(kind, row.id, row.parent_id);
  out.created_at = row.created_at;
  const body = row.body;
  for (const f of plan.fields) {
    if (!(f.key in body)) continue;
    if (f.ref) out[f.ref.outField!] = refOut(f.ref, body[f.key], base);
    else out[f.key] = body[f.key];
  }
  for (const m of kind.modules ?? []) {
    const stored = body[m.name] as Body | null | undefined;
    out[m.name] = stored ? moduleToResponse(m, stored, base) : null;
  }
  for (const [field, childKind] of plan.embeds) {
    const shaped: Body[] = [];
    // The children of every embedded kind come in one list per parent: each field takes its kind's.
    for (const c of children?.get(row.id) ?? []) if (c.kind === childKind.name) shaped.push(toResponse(childKind, c, base));
    out[field] = shaped;
  }
  Object.defineProperty(out, ETAG, { value: etagOf(row) });
  return out;
}

/**
 * A response the service rendered at the object's last write (its stored view, `renderView`), sent
 * as it is: no parse, no shaping, no serialising per GET. `json` is the whole response text.
 */
export class RenderedJson {
  readonly [ETAG]: string;
  constructor(readonly json: string, version: string) {
    this[ETAG] = etagOf({ version });
  }
}

/**
 * The kinds whose objects keep a view: a kind that embeds children (an edge), whose GET shapes the
 * most JSON, and the kinds it embeds (routes). Its one embed field must be its response's last
 * property, so the children's views close it (`withChildren`).
 */
const VIEW_KINDS = new Set<KindDef>();
for (const kind of KINDS) {
  const embeds = Object.entries(kind.embeds ?? {});
  if (embeds.length !== 1) continue;
  if (Object.keys(responseSchema(kind).properties as object).at(-1) !== embeds[0][0]) continue;
  VIEW_KINDS.add(kind);
  VIEW_KINDS.add(kindByName(embeds[0][1]));
}

/** The response schemas of the kinds that keep a view (their serializers are precompiled with the routes'). */
export function viewSchemas(): JSONSchema[] {
  return [...VIEW_KINDS].map((k) => responseSchema(k));
}

export function keepsView(kind: KindDef): boolean {
  return VIEW_KINDS.has(kind);
}

/**
 * The format of the views this code renders: raised whenever a response would be shaped otherwise
 * from the same body and schema (the code that shapes, a dependency that serialises).
 * `test/service/view-format.test.ts` renders a fixed edge and route and fails when their bytes
 * change while this number stays, so a change cannot forget it.
 */
export const VIEW_FORMAT = 1;

/**
 * What a view is valid for besides its base URL: a hash of `VIEW_FORMAT`, the package's version,
 * every response schema, and the kinds' paths and id prefixes. A release (or a working tree) that
 * shapes responses otherwise renders views of its own; the others' are not sent (the object's next
 * write renders it again).
 */
function viewRevision(): string {
  return (revision ??= createHash('sha256')
    .update(`${VIEW_FORMAT}\n${packageVersion()}\n`)
    .update(JSON.stringify(KINDS.map((k) => [responseSchema(k), k.path, k.idPrefix, k.parent ?? null])))
    .update(JSON.stringify([FOREIGN_PATHS, FOREIGN_PREFIX_PATHS]))
    .digest('base64url').slice(0, 16));
}

let revision: string | undefined;

/** `view_for` of a view rendered for `base`. */
export function viewFor(base: string): string {
  return `${viewRevision()} ${base}`;
}

const viewSerializers = new Map<KindDef, (body: unknown) => string>();

/**
 * The view of `row` (what a GET of it answers, for `base`, its embedded children left out), for a
 * kind that keeps one; undefined for the others. Serialised through the response schema, as the
 * route's serialiser does.
 */
export function renderView(kind: KindDef, row: ObjectRow, base: string): StoredView | undefined {
  if (!VIEW_KINDS.has(kind)) return undefined;
  let serialize = viewSerializers.get(kind);
  if (!serialize) viewSerializers.set(kind, (serialize = serviceSerializer(responseSchema(kind))));
  // As the stored body reads back: jsonb keeps object keys in an order of its own.
  const stored = { ...row, body: inJsonbOrder(row.body) as Body };
  const view = serialize(toResponse(kind, stored, base, kind.embeds ? new Map() : undefined));
  if (kind.embeds && !view.endsWith('[]}')) throw new Error(`${kind.name}: a view must end with its empty embed`);
  return { view, viewFor: viewFor(base) };
}

/** A view with its children's views (joined with commas) as its embed: the whole response. */
export function withChildren(view: string, children: string | null): string {
  return `${view.slice(0, -'[]}'.length)}[${children ?? ''}]}`;
}
