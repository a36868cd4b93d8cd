import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KINDS } from '../../src/kinds/registry.js';
import { MANIFEST_SCHEMA_FILE, renderManifestSchema } from '../../src/reconciler/manifests/schema-file.js';
import { buildManifestSchema } from '../../src/reconciler/manifests/schema.js';
import { createAjv } from '../../src/service/validation.js';

describe('manifest JSON Schema', () => {
  it('the committed schemas/manifest.schema.json is what `npm run schemas` generates', () => {
    expect(readFileSync(MANIFEST_SCHEMA_FILE, 'utf8'), 'stale: run `npm run schemas`').toBe(renderManifestSchema());
  });

  it('is composed from the API request schemas of every managed kind, not a copy', () => {
    const schema = buildManifestSchema() as { definitions: Record<string, { properties: Record<string, unknown> }> };
    for (const kind of KINDS.filter((k) => k.manifestKind && !k.parent)) {
      const def = schema.definitions[kind.manifestKind!];
      for (const field of Object.keys(kind.fields)) expect(def.properties, `${kind.manifestKind}.${field}`).toHaveProperty(field);
      for (const m of kind.modules ?? []) expect(def.properties, `${kind.manifestKind}.${m.name}`).toHaveProperty(m.name);
    }
  });

  it('compiles under the service’s strict Ajv configuration', () => {
    expect(() => createAjv().compile(buildManifestSchema())).not.toThrow();
  });
});
