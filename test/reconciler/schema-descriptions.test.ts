import { describe, expect, it } from 'vitest';
import { buildStackFileSchema } from '../../src/reconciler/manifests/config.js';
import { buildManifestSchema } from '../../src/reconciler/manifests/schema.js';

/** Every property schema of `schema` (its path and schema), except inside `if` (a condition, never offered by an editor). */
function properties(schema: unknown, path = '#'): [string, Record<string, unknown>][] {
  if (!schema || typeof schema !== 'object') return [];
  if (Array.isArray(schema)) return schema.flatMap((s, i) => properties(s, `${path}/${i}`));
  const out: [string, Record<string, unknown>][] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'if') continue;
    if (key === 'properties' && value && typeof value === 'object') {
      for (const [name, prop] of Object.entries(value)) out.push([`${path}/properties/${name}`, prop as Record<string, unknown>]);
    }
    out.push(...properties(value, `${path}/${key}`));
  }
  return out;
}

describe('schema descriptions (what an editor shows beside each field)', () => {
  for (const [name, schema] of [['manifest', buildManifestSchema()], ['editor\'s manifest', buildManifestSchema({ variables: true })], ['stack file', buildStackFileSchema()]] as const) {
    it(`every property of the ${name} schema has a description`, () => {
      const all = properties(schema);
      expect(all.length).toBeGreaterThan(0);
      const missing = all.filter(([, s]) => typeof s.description !== 'string' || s.description.trim().length < 10).map(([p]) => p);
      expect(missing).toEqual([]);
    });
  }

  it('a module, a reference and a secret field keep the description their kind gives them', () => {
    const defs = (buildManifestSchema() as { definitions: Record<string, { properties: Record<string, { description?: string; properties?: Record<string, { description?: string }> }> }> }).definitions;
    const route = defs['HTTPSEdge.routes'].properties;
    expect(route.oidc.description).toMatch(/OpenID Connect/);
    expect(route.backend.properties!.backend_id.description).toMatch(/FailoverBackend/);
    expect(route.oidc.properties!.client_secret.description).toMatch(/\{env: NAME\}/);
  });
});
