import { describe, expect, it } from 'vitest';
import fastJson from 'fast-json-stringify';
import { isSerializerPrecompiled, precompiledSerializer, serviceSerializer } from '../../src/service/precompiled-serializers.js';
import { serviceResponseSchemas } from '../../src/service/serializers-file.js';
import { schemaKey } from '../../src/contract/validation.js';

type S = { type?: string | string[]; properties?: Record<string, S>; items?: S; format?: string; enum?: unknown[]; additionalProperties?: boolean | S };

/** A value of `schema` with every property set, an unknown one beside them in every record (`leaked`), and, with `nulls`, null wherever the schema allows it. */
function sample(schema: S, nulls: boolean, depth = 0): unknown {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type ?? 'object'];
  if (nulls && types.includes('null')) return null;
  if (schema.enum) return schema.enum[0];
  const type = types.find((t) => t !== 'null');
  switch (type) {
    case 'object': {
      // A map (`additionalProperties` a schema) keeps every key: no stray one there.
      const o: Record<string, unknown> = schema.additionalProperties === true || typeof schema.additionalProperties === 'object' ? {} : { leaked: 'sk_live_secret' };
      for (const [k, p] of Object.entries(schema.properties ?? {})) o[k] = depth > 6 ? undefined : sample(p, nulls, depth + 1);
      if (typeof schema.additionalProperties === 'object') o.extra = sample(schema.additionalProperties, nulls, depth + 1);
      return o;
    }
    case 'array': return schema.items ? [sample(schema.items, nulls, depth + 1), sample(schema.items, !nulls, depth + 1)] : [];
    case 'string': return schema.format === 'date-time' ? '2026-11-29T12:00:00Z' : 'a "quoted" é\u2028\\ line';
    case 'integer': return 42;
    case 'number': return 0.25;
    case 'boolean': return true;
    default: return 'x';
  }
}

const outcome = (f: (d: unknown) => string, d: unknown) => { try { return f(d); } catch (err) { return `threw ${(err as Error).message}`; } };

describe('precompiled response serializers (npm run schemas)', () => {
  it('every response schema of the service has one', async () => {
    const schemas = await serviceResponseSchemas();
    expect(schemas.length).toBeGreaterThan(50);
    expect(schemas.filter((s) => !isSerializerPrecompiled(s)).map(schemaKey)).toEqual([]);
  });

  it('each writes byte for byte what fast-json-stringify compiles from its schema, unknown properties dropped', async () => {
    const seen = new Set<string>();
    let compared = 0;
    for (const schema of await serviceResponseSchemas()) {
      const key = schemaKey(schema);
      if (seen.has(key)) continue;
      seen.add(key);
      const pre = precompiledSerializer(key)!;
      const compiled = fastJson(structuredClone(schema) as Parameters<typeof fastJson>[0]);
      for (const data of [sample(schema as S, false), sample(schema as S, true), {}, { leaked: 'sk_live_secret' }]) {
        const out = outcome(pre, data);
        expect(out, key).toBe(outcome(compiled, data));
        expect(out).not.toContain('sk_live_secret');
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(100);
  });

  it('a schema outside the precompiled set is compiled at its first use', () => {
    const s = serviceSerializer({ type: 'object', properties: { a: { type: 'integer' } } });
    expect(s({ a: 1, b: 2 })).toBe('{"a":1}');
  });
});
