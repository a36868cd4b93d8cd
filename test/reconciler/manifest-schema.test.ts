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

describe('examples/manifests', () => {
  it('validates and plans (every example a user might copy works)', async () => {
    const { validateDir, planFromState } = await import('../../src/reconciler/pipeline.js');
    const root = 'examples/manifests';
    const v = validateDir({ root, stack: 'production' });
    expect(v.problems).toEqual([]);
    expect(v.objects.flatMap((o) => [o, ...o.children]).map((o) => o.identity)).toEqual([
      'CertificateAuthority/partners', 'FailoverBackend/app', 'FailoverBackend/eu-west',
      'HTTPSEdge/web', 'HTTPSEdge/web/routes/api', 'HTTPSEdge/web/routes/hooks', 'HTTPSEdge/web/routes/site',
    ]);
    const r = planFromState({ root, stack: 'production', env: { WEB_OIDC_CLIENT_SECRET: 'x', GITHUB_WEBHOOK_SECRET: 'y' } }, {}, 'test');
    expect(r.plan!.summary).toEqual({ create: 7, update: 0, replace: 0, delete: 0 });
  });
});
