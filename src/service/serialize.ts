import { objectPath } from '../contract/paths.js';
import { withoutPaths } from '../kinds/paths.js';
import { FOREIGN_PATHS, FOREIGN_PREFIX_PATHS, findKind, kindByName } from '../kinds/registry.js';
import type { Body, JSONSchema, KindDef, ModuleDef, RefDef } from '../kinds/types.js';
import type { ObjectRow } from '../store/objects.js';
import { rfc3339 } from '../util/time.js';

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
  if (r.many) return ((value as string[] | undefined) ?? []).map((id) => ref(r.kind, id, base));
  return typeof value === 'string' ? ref(r.kind, value, base) : null;
}

/** Response form of a module: refs become Refs, secrets are left out. */
export function moduleToResponse(mod: ModuleDef, stored: Body, base: string): Body {
  const visible = withoutPaths(stored, mod.writeOnly ?? []);
  const out: Body = {};
  const order = mod.responseOrder ?? Object.keys(visible);
  const properties = (mod.request.properties ?? {}) as Record<string, JSONSchema>;
  for (const key of order) {
    const r = mod.refs?.find((x) => x.field === key);
    if (r?.outField) out[r.outField] = refOut(r, visible[key], base);
    else if (key in visible) out[key] = inSchemaOrder(visible[key], properties[key]);
  }
  return out;
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
  const out: Body = {};
  if (kind.parent) out[kind.parent.field] = row.parent_id;
  out.id = row.id;
  out.uri = base + objectPath(kind, row.id, row.parent_id);
  out.created_at = rfc3339(row.created_at);
  const body = row.body;
  for (const f of kind.responseOrder) {
    if (!(f in body) || kind.writeOnly?.includes(f)) continue;
    const r = kind.refs?.find((x) => x.field === f && x.outField);
    if (r) out[r.outField!] = refOut(r, body[f], base);
    else out[f] = body[f];
  }
  for (const m of kind.modules ?? []) {
    const stored = body[m.name] as Body | null | undefined;
    out[m.name] = stored ? moduleToResponse(m, stored, base) : null;
  }
  for (const [field, childKindName] of Object.entries(kind.embeds ?? {})) {
    const childKind = kindByName(childKindName);
    out[field] = (children?.get(row.id) ?? []).map((c) => toResponse(childKind, c, base));
  }
  Object.defineProperty(out, ETAG, { value: etagOf(row) });
  return out;
}
