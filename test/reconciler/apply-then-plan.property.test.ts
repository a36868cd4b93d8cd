import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { parseSource } from '../../src/reconciler/manifests/load.js';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateManifests } from '../../src/reconciler/manifests/validate.js';
import { preparePlan } from '../../src/reconciler/plan/prepare.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { applySequentially } from '../helpers/apply-plan.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';

const IDP = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'saml', 'idp-metadata.xml'), 'utf8');
const ENV = { SECRET_1: 'one', SECRET_2: 'two', SECRET_3: 'three' };
const CERTS = ['rsa-ca.pem', 'rsa-ca-2.pem', 'ec-ca.pem'].map((f) => readFileSync(join(import.meta.dirname, '..', 'fixtures', 'certs', f), 'utf8'));
const RUNS = Number(process.env.EDGEPLANE_PROPERTY_RUNS ?? 12);

const text = fc.string({ unit: fc.constantFrom('a', 'Z', ' ', 'é', '"', '{', '}', ':', '\\', '日', '🙂', '\n'), maxLength: 40 });
const foreignId = fc.constantFrom('bkdhr', 'bkdtg', 'bkdwd').chain((p) => fc.stringMatching(/^[0-9A-Za-z]{27}$/).map((s) => `${p}_${s}`));

const secretRef = fc.constantFrom('SECRET_1', 'SECRET_2', 'SECRET_3').map((env) => ({ env }));
const header = fc.constantFrom('X-Team', 'x-debug', 'Accept-Language', 'X-Forwarded-Proto');
const session = { options_passthrough: fc.boolean(), cookie_prefix: fc.constantFrom('app.', 'svc'), inactivity_timeout: fc.nat(86400) };
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

/** Route modules, with at most one authentication module; `backendFrom` picks failover names or raw ids. */
const routeModules = fc.record({
  backend: opt(fc.record({ enabled: opt(fc.boolean()), pick: fc.nat(10) })),
  ip_restriction: opt(fc.record({ ip_policy_ids: fc.uniqueArray(fc.constantFrom('ipp_2Bc4xYzAbCdEfGhIjKlMnOpQr12', 'ipp_2Bc4xYzAbCdEfGhIjKlMnOpQr13'), { maxLength: 2 }) })),
  circuit_breaker: opt(fc.record({ num_buckets: opt(fc.integer({ min: 1, max: 128 })), error_threshold_percentage: opt(fc.double({ min: 0, max: 1, noNaN: true })) }, { requiredKeys: [] })),
  compression: opt(fc.record({ enabled: opt(fc.boolean()) }, { requiredKeys: [] })),
  request_headers: opt(fc.record({ add: opt(fc.dictionary(header, fc.constantFrom('a', 'b c'), { maxKeys: 2 })), remove: opt(fc.uniqueArray(header, { maxLength: 2, selector: (h) => h.toLowerCase() })) }, { requiredKeys: [] })),
  response_headers: opt(fc.record({ remove: opt(fc.uniqueArray(header, { maxLength: 2, selector: (h) => h.toLowerCase() })) }, { requiredKeys: [] })),
  webhook_verification: opt(fc.oneof(fc.record({ provider: fc.constantFrom('github', 'GitHub', 'slack'), secret: secretRef }), fc.constant({ provider: 'sns' }))),
  auth: opt(fc.oneof(
    fc.record({ oidc: fc.record({ issuer: fc.constant('https://id.example.com'), client_id: fc.constantFrom('web', 'api'), client_secret: secretRef, scopes: opt(fc.uniqueArray(fc.constantFrom('openid', 'email'))), ...session }, { requiredKeys: ['issuer', 'client_id', 'client_secret'] }) }),
    fc.record({ oauth: fc.record({ provider: fc.oneof(
      fc.record({ github: fc.record({ client_id: fc.constant('gh'), client_secret: secretRef, email_domains: fc.uniqueArray(fc.constantFrom('Example.com', 'corp.example.org'), { selector: (d) => d.toLowerCase() }), teams: opt(fc.constant(['acme/ops'])) }, { requiredKeys: ['client_id', 'client_secret', 'email_domains'] }) }),
      fc.record({ google: fc.record({ email_addresses: fc.uniqueArray(fc.constantFrom('Ann@Example.com', 'bob@example.com'), { selector: (d) => d.toLowerCase() }) }) }),
    ), auth_check_interval: opt(fc.nat(3600)) }, { requiredKeys: ['provider'] }) }),
    fc.record({ saml: fc.record({ idp_metadata: fc.constant(IDP), force_authn: opt(fc.boolean()), authorized_groups: opt(fc.uniqueArray(fc.constantFrom('admins', 'ops'))) }, { requiredKeys: ['idp_metadata'] }) }),
  )),
  websocket_tcp_converter: opt(fc.record({ enabled: opt(fc.boolean()) }, { requiredKeys: [] })),
}, { requiredKeys: [] });

const edge = fc.record({
  hosts: fc.uniqueArray(fc.nat(5), { minLength: 0, maxLength: 3 }),
  upper: fc.boolean(),
  mutual_tls: opt(fc.record({ enabled: opt(fc.boolean()), cas: fc.uniqueArray(fc.nat(2), { maxLength: 2 }) })),
  tls_termination: opt(fc.record({ min_version: opt(fc.constantFrom('1.2', '1.3', null)) }, { requiredKeys: [] })),
  routes: fc.uniqueArray(fc.record({ match: fc.constantFrom('/', '/a', '/b/c', '/api'), exact: fc.boolean(), modules: routeModules }), { maxLength: 3, selector: (r) => r.match }),
});

/** A random valid manifest set: CAs (distinct certificates), failover backends forming a DAG, edges with routes. */
const manifests = fc.record({
  edges: fc.array(edge, { maxLength: 2 }),
  cas: fc.subarray([0, 1, 2]).chain((certs) => fc.tuple(...certs.map((c) => fc.record({
    pem: fc.constant(c),
    wrap: fc.boolean(), // the PEM re-wrapped differently from how the service stores it
    description: fc.option(text, { nil: undefined }),
    metadata: fc.option(text, { nil: undefined }),
    protect: fc.boolean(),
  })))),
  fos: fc.array(fc.record({
    description: fc.option(text, { nil: undefined }),
    metadata: fc.option(text, { nil: undefined }),
    children: fc.array(fc.oneof(fc.nat(10), foreignId), { maxLength: 4 }),
  }), { maxLength: 6 }),
});

type Gen = typeof manifests extends fc.Arbitrary<infer T> ? T : never;

/** Hostports are unique across the whole service (every account): each run gets its own domain. */
function toYaml(g: Gen, domain: string): string {
  const docs: Record<string, unknown>[] = [];
  g.cas.forEach((c, i) => {
    const pem = c.wrap ? CERTS[c.pem].replace(/\n(?!-----)/g, '\r\n').trimEnd() : CERTS[c.pem];
    docs.push({ kind: 'CertificateAuthority', name: `ca-${i}`, ca_pem: pem, ...(c.description !== undefined ? { description: c.description } : {}), ...(c.metadata !== undefined ? { metadata: c.metadata } : {}), ...(c.protect ? { protect: true } : {}) });
  });
  const usedHosts = new Set<number>();
  g.edges.forEach((e, i) => {
    const hosts = e.hosts.filter((h) => !usedHosts.has(h));
    hosts.forEach((h) => usedHosts.add(h));
    const routes = e.routes.map((r, j) => {
      const m = r.modules;
      const mods: Record<string, unknown> = {};
      if (m.backend) {
        const names = g.fos.map((_, k) => `fo-${k}`);
        const backend_id = names.length && m.backend.pick % 2 === 0 ? names[m.backend.pick % names.length] : 'bkdhr_2Bc4xYzAbCdEfGhIjKlMnOpQr12';
        mods.backend = { backend_id, ...(m.backend.enabled !== undefined ? { enabled: m.backend.enabled } : {}) };
      }
      for (const k of ['ip_restriction', 'circuit_breaker', 'compression', 'request_headers', 'response_headers', 'webhook_verification', 'websocket_tcp_converter'] as const) {
        if (m[k]) mods[k] = stripUndefined(m[k]);
      }
      if (m.auth) Object.assign(mods, stripUndefined(m.auth));
      return { name: `r-${j}`, match_type: r.exact ? 'exact_path' : 'path_prefix', match: r.match, ...mods };
    });
    const cas = e.mutual_tls ? e.mutual_tls.cas.filter((c) => c < g.cas.length).map((c) => `ca-${c}`) : [];
    docs.push({
      kind: 'HTTPSEdge', name: `edge-${i}`,
      hostports: hosts.map((h) => (e.upper ? `Host${h}.${domain.toUpperCase()}:443` : `host${h}.${domain}:443`)),
      ...(e.mutual_tls ? { mutual_tls: stripUndefined({ enabled: e.mutual_tls.enabled, certificate_authority_ids: cas }) } : {}),
      ...(e.tls_termination ? { tls_termination: stripUndefined(e.tls_termination) } : {}),
      routes,
    });
  });
  g.fos.forEach((f, i) => {
    // Only earlier backends may be children: no cycles; duplicates dropped (uniqueItems).
    const children = [...new Set(f.children.map((c) => (typeof c === 'number' ? (i > 0 ? `fo-${c % i}` : null) : c)).filter((c): c is string => !!c))];
    docs.push({ kind: 'FailoverBackend', name: `fo-${i}`, backends: children, ...(f.description !== undefined ? { description: f.description } : {}), ...(f.metadata !== undefined ? { metadata: f.metadata } : {}) });
  });
  return docs.map((d) => stringify(d)).join('---\n');
}

function stripUndefined<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

let svc: TestService;
let runs = 0;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { cleanupDirs(); await svc?.close(); });

async function planFor(client: ApiClient, yamlText: string): Promise<Plan> {
  const parsed = parseSource('gen.yaml', yamlText);
  const v = validateManifests(parsed.docs, { stack: 'prop' });
  const problems = [...parsed.problems, ...v.problems].filter((p) => p.severity === 'error');
  expect(problems.map(formatProblem)).toEqual([]);
  // The path `plan` and `apply` run: manifests read from disk while the list pages arrive, paired as they come.
  const r = await preparePlan({ root: manifestDir({ 'gen.yaml': yamlText }), stack: 'prop', env: ENV, cwd: process.cwd() }, client);
  expect(r.plan, JSON.stringify(r.problems)).toBeDefined();
  return r.plan!;
}

describe('apply then plan is empty (real service, PGlite)', () => {
  it('for random valid manifests (CAs, failover backends, edges, routes, every module), and a random second version applied over the first', async () => {
    await fc.assert(fc.asyncProperty(manifests, manifests, async (first, second) => {
      const account = await svc.account();
      const domain = `run${++runs}.example.com`;
      const client = new ApiClient(httpTransport(svc.url, account.apiKey!));
      for (const g of [first, second]) {
        const y = toYaml(g, domain);
        const plan = await planFor(client, y);
        expect(plan.conflicts).toEqual([]);
        await applySequentially(client, plan, ENV);
        const again = await planFor(client, y);
        expect(again.steps.map((s) => `${s.id} ${JSON.stringify(s.changes)}`)).toEqual([]);
      }
    }), { numRuns: RUNS });
  }, 30_000 + RUNS * 10_000);
});
