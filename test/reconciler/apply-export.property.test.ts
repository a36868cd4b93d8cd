import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportState } from '../../src/reconciler/export/export.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import { applyDir, cleanupDirs, clientFor, duplicates, liveObjects, manifestDir, remaining } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';

/**
 * "Apply then plan is empty" and "export then plan is empty" over random manifest sets with
 * every kind and most modules (SAML is covered by the examples: its signing key generation
 * takes a second per route), applied with the real DAG executor in parallel. Runs:
 * EDGEPLANE_PROPERTY_RUNS (default 6 sets, and 4 sequences of 3 versions).
 */
const CERTS = ['rsa-ca.pem', 'rsa-ca-2.pem', 'ec-ca.pem'].map((f) => readFileSync(join(import.meta.dirname, '..', 'fixtures', 'certs', f), 'utf8'));
const RUNS = Number(process.env.EDGEPLANE_PROPERTY_RUNS ?? 6);

const text = fc.string({ unit: fc.constantFrom('a', 'Z', ' ', 'é', '"', ':', '日', '🙂'), maxLength: 20 });
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const foreignId = fc.constantFrom('bkdhr', 'bkdtg').chain((p) => fc.stringMatching(/^[0-9A-Za-z]{27}$/).map((s) => `${p}_${s}`));
const secretValue = fc.stringMatching(/^[A-Za-z0-9]{8,16}$/);

const route = fc.record({
  match: fc.constantFrom('/', '/api/', '/a', '/b/c', '/ws'),
  matchType: fc.constantFrom('path_prefix', 'exact_path'),
  description: opt(text),
  backend: opt(fc.oneof(fc.nat(5), foreignId)),
  compression: fc.boolean(),
  websocket: opt(fc.boolean()),
  circuit: opt(fc.record({ tripped_duration: opt(fc.integer({ min: 1, max: 100 })), error_threshold_percentage: opt(fc.constantFrom(0, 0.25, 0.5, 1)) })),
  requestHeaders: opt(fc.record({ add: fc.dictionary(fc.constantFrom('X-One', 'x-two', 'X-Three'), text, { maxKeys: 2 }), remove: fc.uniqueArray(fc.constantFrom('Server', 'x-debug'), { maxLength: 2 }) })),
  ipPolicies: opt(fc.uniqueArray(fc.stringMatching(/^[0-9A-Za-z]{27}$/).map((s) => `ipp_${s}`), { maxLength: 2 })),
  auth: fc.oneof(
    fc.constant(undefined),
    fc.record({ kind: fc.constant('oidc' as const), secret: secretValue, scopes: fc.uniqueArray(fc.constantFrom('openid', 'email', 'profile'), { maxLength: 3 }) }),
    fc.record({ kind: fc.constant('oauth' as const), secret: secretValue, orgs: fc.uniqueArray(fc.constantFrom('acme', 'Example-Org'), { maxLength: 2 }) }),
    fc.record({ kind: fc.constant('webhook' as const), secret: secretValue, provider: fc.constantFrom('stripe', 'GitHub', 'slack') }),
  ),
});

const manifests = fc.record({
  cas: fc.subarray([0, 1, 2]).chain((certs) => fc.tuple(...certs.map((c) => fc.record({ pem: fc.constant(c), description: opt(text), metadata: opt(text) })))),
  fos: fc.array(fc.record({ description: opt(text), children: fc.array(fc.oneof(fc.nat(5), foreignId), { maxLength: 3 }) }), { maxLength: 4 }),
  edges: fc.array(fc.record({
    hosts: fc.uniqueArray(fc.nat(6), { minLength: 1, maxLength: 2 }),
    description: opt(text),
    metadata: opt(text),
    mtls: opt(fc.array(fc.nat(2), { maxLength: 3 })),
    tls: opt(fc.constantFrom('1.2', '1.3', null)),
    routes: fc.array(route, { maxLength: 3 }),
  }), { maxLength: 3 }),
});

type Gen = typeof manifests extends fc.Arbitrary<infer T> ? T : never;

/** Writes one random set as YAML; returns its files and the environment its secrets need. */
function render(g: Gen, tag: string): { files: Record<string, string>; env: Record<string, string> } {
  const docs: Record<string, unknown>[] = [];
  const env: Record<string, string> = {};
  const caNames = g.cas.map((_, i) => `ca-${i}`);
  g.cas.forEach((c, i) => docs.push({ kind: 'CertificateAuthority', name: caNames[i], ca_pem: CERTS[c.pem], ...(c.description !== undefined ? { description: c.description } : {}), ...(c.metadata !== undefined ? { metadata: c.metadata } : {}) }));
  const foName = (n: number | string, upTo: number) => (typeof n === 'string' ? n : upTo > 0 ? `fo-${n % upTo}` : null);
  g.fos.forEach((f, i) => {
    const children = [...new Set(f.children.map((c) => foName(c, i)).filter((c): c is string => !!c))];
    docs.push({ kind: 'FailoverBackend', name: `fo-${i}`, backends: children, ...(f.description !== undefined ? { description: f.description } : {}) });
  });
  g.edges.forEach((e, ei) => {
    // Hostports stay with their edge across versions; hostports moving between edges are covered by
    // the swap test below and the hostport scenarios.
    const edge: Record<string, unknown> = { kind: 'HTTPSEdge', name: `e-${ei}`, hostports: e.hosts.map((h) => `h${ei}-${h}.${tag}.example.com:443`) };
    if (e.description !== undefined) edge.description = e.description;
    if (e.metadata !== undefined) edge.metadata = e.metadata;
    if (e.mtls && caNames.length) edge.mutual_tls = { certificate_authority_ids: [...new Set(e.mtls.map((i) => caNames[i % caNames.length]))] };
    if (e.tls !== undefined) edge.tls_termination = { min_version: e.tls };
    const matches = new Set<string>();
    const routes: Record<string, unknown>[] = [];
    e.routes.forEach((r, ri) => {
      if (matches.has(r.match)) return;
      matches.add(r.match);
      const name = `r-${ri}`;
      const o: Record<string, unknown> = { name, match_type: r.matchType, match: r.match };
      if (r.description !== undefined) o.description = r.description;
      const backend = r.backend === undefined ? null : foName(r.backend, g.fos.length);
      if (backend) o.backend = { backend_id: backend };
      if (r.compression) o.compression = {};
      if (r.websocket !== undefined) o.websocket_tcp_converter = { enabled: r.websocket };
      if (r.circuit) o.circuit_breaker = Object.fromEntries(Object.entries(r.circuit).filter(([, v]) => v !== undefined));
      if (r.requestHeaders) o.request_headers = r.requestHeaders;
      if (r.ipPolicies) o.ip_restriction = { ip_policy_ids: r.ipPolicies };
      const envName = `SECRET_E${ei}_R${ri}`;
      if (r.auth) env[envName] = r.auth.secret;
      if (r.auth?.kind === 'oidc') o.oidc = { issuer: 'https://id.example.com', client_id: `c-${ri}`, client_secret: { env: envName }, scopes: r.auth.scopes };
      if (r.auth?.kind === 'oauth') o.oauth = { provider: { github: { client_id: `gh-${ri}`, client_secret: { env: envName }, organizations: r.auth.orgs } } };
      if (r.auth?.kind === 'webhook') o.webhook_verification = { provider: r.auth.provider, secret: { env: envName } };
      routes.push(o);
    });
    if (routes.length) edge.routes = routes;
    docs.push(edge);
  });
  return { files: { 'all.yaml': docs.map((d) => stringify(d)).join('---\n') }, env };
}

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });

let runs = 0;
const tag = () => `p${++runs}${Math.random().toString(36).slice(2, 6)}`;

describe('properties (real service, real executor)', () => {
  it('random manifests → apply → plan is empty; export → plan is empty', { timeout: 300_000 }, async () => {
    await fc.assert(fc.asyncProperty(manifests, async (g) => {
      const client = await clientFor(svc);
      const { files, env } = render(g, tag());
      const dir = manifestDir(files);
      await applyDir(client, dir, 'prop', env, { parallelism: 8 });
      expect(await remaining(client, dir, 'prop', env)).toEqual([]);

      const exp = exportState(await readLiveState(client), { stack: 'prop' });
      const exportedEnv: Record<string, string> = {};
      // Exported secret variables name the object and path; the values are the ones applied.
      for (const s of exp.secrets) {
        const m = /^HTTPSEdge\/e-(\d+)\/routes\/r-(\d+)$/.exec(s.identity)!;
        exportedEnv[s.env] = env[`SECRET_E${m[1]}_R${m[2]}`];
      }
      const expDir = manifestDir(Object.fromEntries(exp.files.map((f) => [f.name, f.text])));
      expect(await remaining(client, expDir, 'prop', exportedEnv)).toEqual([]);
    }), { numRuns: RUNS, endOnFailure: true });
  });

  it('random sequences of manifest versions → apply after each → plan is empty, no duplicates', { timeout: 300_000 }, async () => {
    await fc.assert(fc.asyncProperty(fc.array(manifests, { minLength: 2, maxLength: 3 }), async (versions) => {
      const client = await clientFor(svc);
      const t = tag();
      for (const g of versions) {
        const { files, env } = render(g, t);
        const dir = manifestDir(files);
        await applyDir(client, dir, 'seq', env, { parallelism: 4 });
        expect(await remaining(client, dir, 'seq', env)).toEqual([]);
      }
      const live = await liveObjects(client);
      expect(duplicates(live)).toEqual([]);
      expect(live.filter((o) => o.identity === 'unmanaged')).toEqual([]);
    }), { numRuns: Math.max(1, Math.round(RUNS * 0.7)), endOnFailure: true });
  });

  // Found by the sequence property (seed 1683305141): two edges swapping hostports; one of them
  // gives its hostport up first (a release step), or the updates would wait for each other.
  it('two edges swapping hostports converge', async () => {
    const client = await clientFor(svc);
    const t = tag();
    const edges = (a: string, b: string) => `kind: HTTPSEdge\nname: one\nhostports: ["${a}.${t}.example.com:443"]\n---\nkind: HTTPSEdge\nname: two\nhostports: ["${b}.${t}.example.com:443"]\n`;
    await applyDir(client, manifestDir({ 'a.yaml': edges('x', 'y') }), 'swap');
    const swapped = manifestDir({ 'a.yaml': edges('y', 'x') });
    await applyDir(client, swapped, 'swap');
    expect(await remaining(client, swapped, 'swap')).toEqual([]);
  });
});
