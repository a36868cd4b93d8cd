import type { JSONSchema, KindDef, ModuleDef } from './types.js';

/** The request form of a module, or `null` (a slot given as null is left as it is). */
function nullable(s: JSONSchema): JSONSchema {
  return { ...s, type: ['object', 'null'] };
}

/**
 * A module's request schema with its derived fields named as forbidden, so a client that echoes a
 * response back learns why (`saml.entity_id: is set by the service`) instead of "unknown field".
 */
export function moduleInputSchema(mod: ModuleDef): JSONSchema {
  const properties = { ...(mod.request.properties as Record<string, JSONSchema>) };
  for (const d of mod.derived ?? []) {
    properties[d] ??= { not: {}, 'x-rule': 'is set by the service and cannot be given; leave it out', description: 'Set by the service and returned in responses; cannot be given.' };
  }
  return { ...mod.request, properties };
}

/**
 * Create / update body schema of a kind, built from its description. `tolerated` are path
 * parameters a body may repeat (checked for equality by the handler).
 */
export function requestSchema(kind: KindDef, op: 'create' | 'update', tolerated: string[] = []): JSONSchema {
  const properties: Record<string, JSONSchema> = {};
  for (const [name, s] of Object.entries(kind.fields)) properties[name] = s;
  for (const m of kind.modules ?? []) properties[m.name] = nullable(moduleInputSchema(m));
  for (const t of tolerated) properties[t] = { type: 'string' };
  return {
    type: 'object',
    properties,
    additionalProperties: false,
    ...(op === 'create' && kind.required?.length ? { required: kind.required } : {}),
  };
}

/** PUT body schema of a module (after `{"module": …}` unwrapping). */
export function moduleRequestSchema(mod: ModuleDef, tolerated: string[] = []): JSONSchema {
  const input = moduleInputSchema(mod);
  const properties = { ...(input.properties as Record<string, JSONSchema>) };
  for (const t of tolerated) properties[t] = { type: 'string' };
  return { ...input, type: 'object', properties };
}
