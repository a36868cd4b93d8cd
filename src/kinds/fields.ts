import { idPattern } from '../util/ids.js';
import type { JSONSchema, KindDef } from './types.js';

/**
 * A schema with its description (and examples): what the field does, its default, its limits.
 * Written once, here in the kind descriptions: the manifest schema (editors), the stack-file
 * schema and the API's own documents all read them from the schemas.
 */
export function described(schema: JSONSchema, text: string, examples?: unknown[]): JSONSchema {
  return { ...schema, description: text, ...(examples ? { examples } : {}) };
}

/** Shared field schemas. `maxBytes` and `x-rule` are our ajv keywords (src/service/validation.ts). */
export const description: JSONSchema = described({ type: 'string', maxBytes: 255 }, 'What this object is for, for people (at most 255 bytes).');
export const metadata: JSONSchema = described({ type: 'string', maxBytes: 4096 }, 'Your own data about the object, stored and returned as given (at most 4096 bytes; objects the reconciler manages share it with their ownership marker).');
export const enabled: JSONSchema = described({ type: 'boolean' }, 'Whether the module is applied to traffic; false keeps its configuration but turns it off. Default: true.');

export function id(prefix: string, what: string): JSONSchema {
  return { type: 'string', pattern: idPattern(prefix), 'x-rule': `must be ${what} id (${prefix}_…)` };
}

export function ids(prefixes: string[], what: string, maxItems?: number): JSONSchema {
  const pattern = `^(${prefixes.join('|')})_[0-9A-Za-z]{27}$`;
  return {
    type: 'array',
    items: { type: 'string', pattern, 'x-rule': `must be ${what} id (${prefixes.map((p) => p + '_…').join(', ')})` },
    ...(maxItems ? { maxItems } : {}),
  };
}

export const uint32: JSONSchema = { type: 'integer', minimum: 0, maximum: 4294967295 };
export const positiveUint32: JSONSchema = { type: 'integer', minimum: 1, maximum: 4294967295 };
export const stringList: JSONSchema = { type: 'array', items: { type: 'string' } };

/** A field this object does not take, with the reason (rather than "unknown field"). */
export function forbidden(rule: string): JSONSchema {
  return { not: {}, 'x-rule': rule };
}

/** A closed object: unknown fields are errors (typos must fail). */
export function object(properties: Record<string, JSONSchema>, required?: string[]): JSONSchema {
  return { type: 'object', properties, additionalProperties: false, ...(required?.length ? { required } : {}) };
}

/** A bounded list of bounded strings (scopes, groups, header names …); rules on items live in the module's normaliser. */
export function strings(maxItems: number, maxBytes = 256): JSONSchema {
  return { type: 'array', maxItems, items: { type: 'string', minLength: 1, maxBytes } };
}

export const secret: JSONSchema = { type: 'string', minLength: 1, maxBytes: 4096, description: 'A secret (at most 4096 bytes): stored, never returned.' };

/**
 * Whether `""` clears the field: optional string fields such as description and metadata. The
 * service stores such a field as absent, and the planner reads an empty one back as absent.
 */
export function clearable(kind: KindDef, field: string): boolean {
  return kind.fields[field]?.type === 'string' && !kind.required?.includes(field);
}
