import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GENERATED_DIRS, generatedFiles } from '../../scripts/generated-files.js';
import * as generated from '../../src/generated/manifest-validators.js';
import { KINDS } from '../../src/kinds/registry.js';
import { MANIFEST_SCHEMA_FILE } from '../../src/reconciler/manifests/schema-file.js';
import { buildManifestSchema, manifestKinds, MANIFEST_SCHEMA_ID } from '../../src/reconciler/manifests/schema.js';
import { createAjv, schemaKey, type Validator } from '../../src/contract/validation.js';
import { disagreements, exampleDocs, mutations } from '../helpers/mutations.js';

describe('manifest JSON Schema', () => {
  it('every committed file `npm run schemas` writes is what it generates now (schema, precompiled validators)', async () => {
    const files = await generatedFiles();
    expect(files.map((f) => f.path)).toContain(MANIFEST_SCHEMA_FILE);
    for (const f of files) expect(readFileSync(f.path, 'utf8'), `${relative(process.cwd(), f.path)} is stale: run \`npm run schemas\``).toBe(f.text);
    // A directory the generator owns holds nothing else (a removed schema's validator, left behind).
    const paths = new Set(files.map((f) => f.path));
    const extra = GENERATED_DIRS.flatMap((d) => readdirSync(d).map((n) => join(d, n))).filter((p) => !paths.has(p));
    expect(extra.map((p) => relative(process.cwd(), p)), 'stale: run `npm run schemas`').toEqual([]);
  });

  it('generating twice gives identical output', async () => {
    const [a, b] = [await generatedFiles(), await generatedFiles()];
    expect(a.map((f) => f.text)).toEqual(b.map((f) => f.text));
  });

  it('the precompiled validators are those of this schema and report exactly what the collecting Ajv compiles', async () => {
    expect(generated.SCHEMA_KEY).toBe(schemaKey(buildManifestSchema()));
    const ajv = createAjv({ allErrors: true });
    ajv.addSchema(buildManifestSchema());
    const precompiled = generated as unknown as Record<string, Validator>;
    const differ: unknown[] = [];
    const outcomes = { valid: 0, invalid: 0 };
    const kinds = new Set(manifestKinds().map((k) => k.manifestKind!));
    for (const doc of exampleDocs().filter((d) => kinds.has(d.kind as string))) {
      const fresh = ajv.getSchema(`${MANIFEST_SCHEMA_ID}#/definitions/${doc.kind as string}`)!;
      const pre = precompiled[doc.kind as string];
      differ.push(...disagreements(pre, fresh, [doc, ...mutations(doc)], outcomes));
    }
    expect(differ.slice(0, 3)).toEqual([]);
    expect(outcomes.valid).toBeGreaterThan(50);
    expect(outcomes.invalid).toBeGreaterThan(1000);
  });

  it('is composed from the API request schemas of every managed kind, not a copy', async () => {
    const schema = buildManifestSchema() as { definitions: Record<string, { properties: Record<string, unknown> }> };
    for (const kind of KINDS.filter((k) => k.manifestKind && !k.parent)) {
      const def = schema.definitions[kind.manifestKind!];
      for (const field of Object.keys(kind.fields)) expect(def.properties, `${kind.manifestKind}.${field}`).toHaveProperty(field);
      for (const m of kind.modules ?? []) expect(def.properties, `${kind.manifestKind}.${m.name}`).toHaveProperty(m.name);
    }
  });

  it('compiles under the service’s strict Ajv configuration', async () => {
    expect(() => createAjv().compile(buildManifestSchema())).not.toThrow();
  });
});

describe('the editor\'s manifest schema (schemas/manifest.schema.json): {var: NAME} wherever a value may be a variable', () => {
  const editor = JSON.parse(readFileSync(MANIFEST_SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
  const ajv = createAjv({ allErrors: true });
  ajv.addSchema(editor);
  const check = ajv.getSchema(MANIFEST_SCHEMA_ID)!;
  const edge = (over: Record<string, unknown>) => ({ kind: 'HTTPSEdge', name: 'web', hostports: ['shop.example.com:443'], ...over });
  const route = (over: Record<string, unknown>) => edge({ routes: [{ name: 'r', match_type: 'path_prefix', match: '/', ...over }] });

  it('is the strict schema with variables allowed, compiling under the strict Ajv configuration', () => {
    expect(editor).toEqual(buildManifestSchema({ variables: true }));
    expect(() => createAjv().compile(editor)).not.toThrow();
  });

  it('accepts {var: NAME} as a whole field, a list item, a module, a route field and a reference, and ${var.NAME} in strings', () => {
    for (const doc of [
      edge({ hostports: { var: 'hosts' } }), edge({ hostports: [{ var: 'host' }, 'x.example.com:443'] }), edge({ description: { var: 'title' } }),
      edge({ hostports: ['${var.domain}:443'] }), route({ circuit_breaker: { error_threshold_percentage: { var: 'share' } } }),
      route({ backend: { backend_id: { var: 'app' } } }), route({ ip_restriction: { var: 'office_only' } }), edge({ name: 'web', routes: [{ var: 'extra_route' }] }),
      { kind: 'FailoverBackend', name: 'app', backends: { var: 'app_backends' } },
    ]) expect(check(doc), JSON.stringify(doc) + JSON.stringify(check.errors)).toBe(true);
  });

  it('still refuses what is not a variable or not a value of the field', () => {
    for (const doc of [
      edge({ hostports: { var: 1 } }), edge({ hostports: { var: 'a b' } }), edge({ hostports: { var: 'hosts', extra: 1 } }),
      edge({ hostports: 5 }), edge({ hostport: ['x.example.com:443'] }), route({ circuit_breaker: { error_threshold_percentage: 'half' } }),
      { kind: { var: 'kind' }, name: 'web' },
    ]) expect(check(doc), JSON.stringify(doc)).toBe(false);
  });

  it('the validation of manifests stays strict: a {var: NAME} left after substitution is refused by the precompiled validators', () => {
    const strict = (generated as unknown as Record<string, Validator>).HTTPSEdge;
    expect(strict(edge({}))).toBe(true);
    expect(strict(edge({ hostports: { var: 'hosts' } }))).toBe(false);
    expect(strict(route({ circuit_breaker: { error_threshold_percentage: { var: 'share' } } }))).toBe(false);
  });
});

describe('examples/manifests', () => {
  it('validates and plans (every example a user might copy works)', async () => {
    const { validateDir } = await import('../../src/reconciler/plan/prepare.js');
    const { planFromState } = await import('../helpers/plan-lists.js');
    const root = 'examples/manifests';
    const v = validateDir({ root, stack: 'production' });
    expect(v.problems).toEqual([]);
    expect(v.objects.flatMap((o) => [o, ...o.children]).map((o) => o.identity)).toEqual([
      'CertificateAuthority/partners', 'FailoverBackend/app', 'FailoverBackend/eu-west',
      'HTTPSEdge/web', 'HTTPSEdge/web/routes/api', 'HTTPSEdge/web/routes/hooks', 'HTTPSEdge/web/routes/site',
    ]);
    const r = (await planFromState({ root, stack: 'production', env: { WEB_OIDC_CLIENT_SECRET: 'x', GITHUB_WEBHOOK_SECRET: 'y' } }, {}, 'test'));
    expect(r.plan!.summary).toEqual({ create: 7, update: 0, replace: 0, delete: 0 });
  });
});
