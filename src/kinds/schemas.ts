import type { JSONSchema, KindDef, ModuleDef } from './types.js';

/** The request form of a module, or `null` (a slot given as null is left as it is). */
function nullable(s: JSONSchema): JSONSchema {
  return { ...s, type: ['object', 'null'] };
}

/**
 * Create / update body schema of a kind, built from its description. `tolerated` are path
 * parameters a body may repeat (checked for equality by the handler).
 */
export function requestSchema(kind: KindDef, op: 'create' | 'update', tolerated: string[] = []): JSONSchema {
  const properties: Record<string, JSONSchema> = {};
  for (const [name, s] of Object.entries(kind.fields)) properties[name] = s;
  for (const m of kind.modules ?? []) properties[m.name] = nullable(m.request);
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
  const properties = { ...(mod.request.properties as Record<string, JSONSchema>) };
  for (const t of tolerated) properties[t] = { type: 'string' };
  return { ...mod.request, type: 'object', properties };
}
