import { kindByName } from './registry.js';
import type { JSONSchema, KindDef, ModuleDef, RefDef } from './types.js';

/**
 * Response schemas, built from the kind descriptions as `toResponse` / `moduleToResponse`
 * (src/service/responses/serialize.ts) build responses: the same fields in the same order. The service
 * serialises every success response with them (fast-json-stringify keeps a schema's property
 * order and drops any field the schema does not name: a secret can never leak), and the OpenAPI
 * document publishes them.
 */

/** Keywords a response schema keeps from a request schema; the request's rules (patterns, sizes, `x-rule`) are not the response's. */
const KEPT = new Set(['type', 'properties', 'items', 'additionalProperties', 'enum', 'description', 'format']);

/**
 * A request field's schema as it is returned: only the shape (types, properties, items), without
 * the fields the request forbids (`not`) and without `writeOnly` paths (dotted, relative).
 */
export function responseForm(schema: JSONSchema, writeOnly: string[] = []): JSONSchema | null {
  if ('not' in schema) return null;
  const out: JSONSchema = {};
  for (const [k, v] of Object.entries(schema)) {
    if (!KEPT.has(k)) continue;
    if (k === 'properties') {
      const props: Record<string, JSONSchema> = {};
      for (const [name, s] of Object.entries(v as Record<string, JSONSchema>)) {
        if (writeOnly.includes(name)) continue;
        const inner = writeOnly.filter((p) => p.startsWith(name + '.')).map((p) => p.slice(name.length + 1));
        const form = responseForm(s, inner);
        if (form) props[name] = form;
      }
      out.properties = props;
    } else if ((k === 'items' || k === 'additionalProperties') && typeof v === 'object' && v !== null) {
      out[k] = responseForm(v as JSONSchema) ?? {};
    } else {
      out[k] = v;
    }
  }
  return out;
}

const REF: JSONSchema = {
  type: 'object',
  description: 'A reference to another object',
  properties: { id: { type: 'string' }, uri: { type: 'string', format: 'uri' } },
  required: ['id', 'uri'],
  additionalProperties: false,
};

function refSchema(r: RefDef): JSONSchema {
  return r.many ? { type: 'array', items: REF } : { ...REF, type: ['object', 'null'] };
}

function nullable(s: JSONSchema): JSONSchema {
  return { ...s, type: [s.type as string, 'null'] };
}

function derivedSchema(owner: { name: string; derivedSchemas?: Record<string, JSONSchema> }, field: string): JSONSchema {
  const s = owner.derivedSchemas?.[field];
  if (!s) throw new Error(`${owner.name}: derived field ${field} has no schema in derivedSchemas`);
  return s;
}

/** The response form of a module (the value of its slot, and the body of its GET and PUT). */
export function moduleResponseSchema(mod: ModuleDef): JSONSchema {
  const request = (mod.request.properties ?? {}) as Record<string, JSONSchema>;
  const order = mod.responseOrder ?? [...Object.keys(request), ...(mod.derived ?? [])];
  const properties: Record<string, JSONSchema> = {};
  for (const key of order) {
    const r = mod.refs?.find((x) => x.field === key);
    if (r?.outField) properties[r.outField] = refSchema(r);
    else if (mod.derived?.includes(key)) properties[key] = derivedSchema(mod, key);
    else if (request[key] && !mod.writeOnly?.includes(key)) {
      const form = responseForm(request[key], (mod.writeOnly ?? []).filter((p) => p.startsWith(key + '.')).map((p) => p.slice(key.length + 1)));
      if (form) properties[key] = form;
    }
  }
  return { type: 'object', properties, additionalProperties: false };
}

const cache = new Map<KindDef, JSONSchema>();

/** The response form of one object of `kind`: what its GET, create and update answer. */
export function responseSchema(kind: KindDef): JSONSchema {
  let s = cache.get(kind);
  if (s) return s;
  const properties: Record<string, JSONSchema> = {};
  const required: string[] = [];
  if (kind.parent) {
    properties[kind.parent.field] = { type: 'string', description: `id of the ${kindByName(kind.parent.kind).title}` };
    required.push(kind.parent.field);
  }
  properties.id = { type: 'string', description: `${kind.idPrefix}_ followed by 27 characters` };
  properties.uri = { type: 'string', format: 'uri' };
  properties.created_at = { type: 'string', format: 'date-time' };
  required.push('id', 'uri', 'created_at');
  for (const f of kind.responseOrder) {
    if (kind.writeOnly?.includes(f)) continue;
    const r = kind.refs?.find((x) => x.field === f && x.outField);
    if (r) properties[r.outField!] = refSchema(r);
    else if (kind.derived?.includes(f)) properties[f] = derivedSchema(kind, f);
    else if (kind.fields[f]) {
      const form = responseForm(kind.fields[f]);
      if (form) properties[f] = form;
    }
  }
  // Module slots and embeds are always present, but are not listed as `required`:
  // fast-json-stringify writes required properties first, which would move them before the
  // optional plain fields. Only the leading fields are.
  for (const m of kind.modules ?? []) properties[m.name] = { ...nullable(moduleResponseSchema(m)), description: `null when the ${m.name} module is not configured` };
  for (const [field, child] of Object.entries(kind.embeds ?? {})) properties[field] = { type: 'array', items: responseSchema(kindByName(child)) };
  s = { type: 'object', properties, required, additionalProperties: false };
  cache.set(kind, s);
  return s;
}

/** A page of a list: the objects (newest first), the list's own uri and the next page's. */
export function listResponseSchema(kind: KindDef): JSONSchema {
  return {
    type: 'object',
    properties: {
      [kind.listKey!]: { type: 'array', items: responseSchema(kind) },
      uri: { type: 'string', format: 'uri' },
      next_page_uri: { type: ['string', 'null'], format: 'uri' },
    },
    required: [kind.listKey!, 'uri', 'next_page_uri'],
    additionalProperties: false,
  };
}
