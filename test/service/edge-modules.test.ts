import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CA_PEM_2, expectRejected, fakeId, IDP_METADATA, IDP_METADATA_DEFAULT_NS, newCa, newEdge, newFailover, newRoute } from '../helpers/edges.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

type Body = Record<string, any>;
/** What a case can refer to: objects made for the test, the service's base URL, the owner's id. */
interface Fx { ca1: string; ca2: string; fo1: string; fo2: string; base: string; ownerId: string }

/**
 * One row per module: a valid request and the response it gives, a different value applied by a
 * PATCH of the owner, and invalid requests with the field the error must name.
 */
interface ModuleCase {
  name: string;
  on: 'edge' | 'route';
  valid(f: Fx): Body;
  expected(f: Fx): Body;
  other(f: Fx): Body;
  otherExpected(f: Fx): Body;
  invalid: [(f: Fx) => Body, string][];
}

const IPP1 = fakeId('ipp');
const IPP2 = fakeId('ipp');
const ref = (base: string, path: string, id: string) => ({ id, uri: `${base}${path}/${id}` });
const session = { enabled: true, options_passthrough: false, cookie_prefix: 'service.' };
const PEM = expect.stringMatching(/^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----\n$/);

function headersCase(name: string): ModuleCase {
  return {
    name,
    on: 'route',
    valid: () => ({ add: { 'X-Foo': 'bar baz', 'X-Empty': '' }, remove: ['X-Secret'] }),
    expected: () => ({ enabled: true, add: { 'x-foo': 'bar baz', 'x-empty': '' }, remove: ['x-secret'] }),
    other: () => ({ enabled: false, remove: ['Cookie', 'server'] }),
    otherExpected: () => ({ enabled: false, add: {}, remove: ['cookie', 'server'] }),
    invalid: [
      [() => ({ add: { 'bad header': 'x' } }), `${name}.add`],
      [() => ({ add: { 'X-A': '1', 'x-a': '2' } }), `${name}.add`],
      [() => ({ add: { 'x-a': 'a\r\nb' } }), `${name}.add.x-a`],
      [() => ({ add: { 'x-a': 1 } }), 'add.x-a'],
      [() => ({ remove: ['a', 'A'] }), `${name}.remove[1]`],
      [() => ({ remove: [''] }), 'remove[0]'],
      [() => ({ remove: 'x-a' }), 'remove'],
    ],
  };
}

function enabledOnly(name: string): ModuleCase {
  return {
    name,
    on: 'route',
    valid: () => ({}),
    expected: () => ({ enabled: true }),
    other: () => ({ enabled: false }),
    otherExpected: () => ({ enabled: false }),
    invalid: [[() => ({ enabled: 'yes' }), 'enabled'], [() => ({ level: 9 }), 'level']],
  };
}

const CASES: ModuleCase[] = [
  {
    name: 'mutual_tls',
    on: 'edge',
    valid: (f) => ({ certificate_authority_ids: [f.ca1] }),
    expected: (f) => ({ enabled: true, certificate_authorities: [ref(f.base, '/certificate_authorities', f.ca1)] }),
    other: (f) => ({ enabled: false, certificate_authority_ids: [f.ca2, f.ca1] }),
    otherExpected: (f) => ({ enabled: false, certificate_authorities: [ref(f.base, '/certificate_authorities', f.ca2), ref(f.base, '/certificate_authorities', f.ca1)] }),
    invalid: [
      [() => ({ certificate_authority_ids: ['nope'] }), 'certificate_authority_ids[0]'],
      [() => ({ certificate_authority_ids: [fakeId('ca')] }), 'certificate_authority_ids[0]'],
      [(f) => ({ certificate_authority_ids: [f.ca1, f.ca1] }), 'certificate_authority_ids'],
      [() => ({ certificate_authority_ids: Array.from({ length: 11 }, () => fakeId('ca')) }), 'certificate_authority_ids'],
      [() => ({ certificate_authorities: [] }), 'certificate_authorities'],
    ],
  },
  {
    name: 'tls_termination',
    on: 'edge',
    valid: () => ({ min_version: '1.3' }),
    expected: () => ({ enabled: true, terminate_at: 'edge', min_version: '1.3' }),
    other: () => ({ enabled: false }),
    otherExpected: () => ({ enabled: false, terminate_at: 'edge', min_version: '1.2' }),
    invalid: [
      [() => ({ min_version: '1.4' }), 'min_version'],
      [() => ({ min_version: 1.2 }), 'min_version'],
      [() => ({ terminate_at: 'edge' }), 'terminate_at'],
      [() => ({ terminate_at: 'upstream' }), 'terminate_at'],
    ],
  },
  {
    name: 'backend',
    on: 'route',
    valid: (f) => ({ backend_id: f.fo1 }),
    expected: (f) => ({ enabled: true, backend: ref(f.base, '/backends/failover', f.fo1) }),
    other: (f) => ({ enabled: false, backend_id: f.fo2 }),
    otherExpected: (f) => ({ enabled: false, backend: ref(f.base, '/backends/failover', f.fo2) }),
    invalid: [
      [() => ({}), 'backend_id'],
      [() => ({ backend_id: 'bkdfo_short' }), 'backend_id'],
      [() => ({ backend_id: fakeId('bkdfo') }), 'backend_id'],
      [(f) => ({ backend: { id: f.fo1 } }), 'backend'],
    ],
  },
  {
    name: 'ip_restriction',
    on: 'route',
    valid: () => ({ ip_policy_ids: [IPP1] }),
    expected: (f) => ({ enabled: true, ip_policies: [ref(f.base, '/ip_policies', IPP1)] }),
    other: () => ({ ip_policy_ids: [IPP2, IPP1] }),
    otherExpected: (f) => ({ enabled: true, ip_policies: [ref(f.base, '/ip_policies', IPP2), ref(f.base, '/ip_policies', IPP1)] }),
    invalid: [
      [() => ({ ip_policy_ids: [fakeId('ca')] }), 'ip_policy_ids[0]'],
      [() => ({ ip_policy_ids: [IPP1, IPP1] }), 'ip_policy_ids'],
      [() => ({ ip_policy_ids: IPP1 }), 'ip_policy_ids'],
    ],
  },
  {
    name: 'circuit_breaker',
    on: 'route',
    valid: () => ({ error_threshold_percentage: 0.25, num_buckets: 128 }),
    expected: () => ({ enabled: true, tripped_duration: 10, rolling_window: 10, num_buckets: 128, volume_threshold: 20, error_threshold_percentage: 0.25 }),
    other: () => ({ tripped_duration: 30, rolling_window: 60, num_buckets: 1, volume_threshold: 0, error_threshold_percentage: 1 }),
    otherExpected: () => ({ enabled: true, tripped_duration: 30, rolling_window: 60, num_buckets: 1, volume_threshold: 0, error_threshold_percentage: 1 }),
    invalid: [
      [() => ({ error_threshold_percentage: 1.5 }), 'error_threshold_percentage'],
      [() => ({ error_threshold_percentage: -0.1 }), 'error_threshold_percentage'],
      [() => ({ num_buckets: 129 }), 'num_buckets'],
      [() => ({ num_buckets: 0 }), 'num_buckets'],
      [() => ({ tripped_duration: 0 }), 'tripped_duration'],
      [() => ({ rolling_window: -1 }), 'rolling_window'],
      [() => ({ volume_threshold: 1.5 }), 'volume_threshold'],
      [() => ({ volume_threshold: 2 ** 32 }), 'volume_threshold'],
    ],
  },
  enabledOnly('compression'),
  headersCase('request_headers'),
  headersCase('response_headers'),
  {
    name: 'webhook_verification',
    on: 'route',
    valid: () => ({ provider: 'Stripe', secret: 'whsec_one' }),
    expected: () => ({ enabled: true, provider: 'stripe' }),
    other: () => ({ provider: 'SNS' }),
    otherExpected: () => ({ enabled: true, provider: 'sns' }),
    invalid: [
      [() => ({ provider: 'nope', secret: 'x' }), 'webhook_verification.provider'],
      [() => ({ provider: 'github' }), 'webhook_verification.secret'],
      [() => ({ provider: 'sns', secret: 'x' }), 'webhook_verification.secret'],
      [() => ({ secret: 'x' }), 'provider'],
      [() => ({ provider: 'github', secret: '' }), 'secret'],
    ],
  },
  {
    name: 'oauth',
    on: 'route',
    valid: () => ({ provider: { github: { client_id: 'id1', client_secret: 's3cret-oauth', scopes: ['read:org'], email_addresses: ['Ann@Example.COM'], teams: ['acme/devs'], organizations: ['acme'] } } }),
    expected: () => ({ ...session, provider: { github: { client_id: 'id1', scopes: ['read:org'], email_addresses: ['ann@example.com'], email_domains: [], teams: ['acme/devs'], organizations: ['acme'] } } }),
    other: () => ({ cookie_prefix: 'my.app', inactivity_timeout: 3600, auth_check_interval: 300, provider: { google: { email_domains: ['Example.com'] } } }),
    otherExpected: () => ({ ...session, cookie_prefix: 'my.app', inactivity_timeout: 3600, auth_check_interval: 300, provider: { google: { scopes: [], email_addresses: [], email_domains: ['example.com'] } } }),
    invalid: [
      [() => ({}), 'provider'],
      [() => ({ provider: {} }), 'oauth.provider'],
      [() => ({ provider: { github: {}, google: {} } }), 'oauth.provider'],
      [() => ({ provider: { myspace: {} } }), 'myspace'],
      [() => ({ provider: { github: { client_id: 'x' } } }), 'oauth.provider.github.client_secret'],
      [() => ({ provider: { github: { client_secret: 'x' } } }), 'oauth.provider.github.client_id'],
      [() => ({ provider: { github: { scopes: ['user'] } } }), 'oauth.provider.github.scopes'],
      [() => ({ provider: { google: { teams: ['a/b'] } } }), 'provider.google.teams'],
      [() => ({ provider: { gitlab: { organizations: ['a'] } } }), 'provider.gitlab.organizations'],
      [() => ({ provider: { github: { teams: ['noslash'] } } }), 'oauth.provider.github.teams[0]'],
      [() => ({ provider: { github: { email_addresses: ['nope'] } } }), 'oauth.provider.github.email_addresses[0]'],
      [() => ({ provider: { github: { email_domains: ['-bad.com'] } } }), 'oauth.provider.github.email_domains[0]'],
      [() => ({ provider: { github: { email_domains: ['a.com', 'A.com'] } } }), 'oauth.provider.github.email_domains[1]'],
      [() => ({ cookie_prefix: 'a b', provider: { github: {} } }), 'cookie_prefix'],
    ],
  },
  {
    name: 'saml',
    on: 'route',
    valid: () => ({ idp_metadata: IDP_METADATA }),
    expected: (f) => ({
      ...session, idp_metadata: IDP_METADATA, force_authn: false, allow_idp_initiated: false, authorized_groups: [],
      entity_id: `${f.base}/saml/${f.ownerId}/metadata`, metadata_url: `${f.base}/saml/${f.ownerId}/metadata`,
      assertion_consumer_service_url: `${f.base}/saml/${f.ownerId}/acs`, single_logout_url: `${f.base}/saml/${f.ownerId}/slo`,
      request_signing_certificate_pem: PEM, nameid_format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
    }),
    other: () => ({ idp_metadata: IDP_METADATA_DEFAULT_NS, force_authn: true, authorized_groups: ['admins'], nameid_format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' }),
    otherExpected: (f) => ({
      ...session, idp_metadata: IDP_METADATA_DEFAULT_NS, force_authn: true, allow_idp_initiated: false, authorized_groups: ['admins'],
      entity_id: `${f.base}/saml/${f.ownerId}/metadata`, metadata_url: `${f.base}/saml/${f.ownerId}/metadata`,
      assertion_consumer_service_url: `${f.base}/saml/${f.ownerId}/acs`, single_logout_url: `${f.base}/saml/${f.ownerId}/slo`,
      request_signing_certificate_pem: PEM, nameid_format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    }),
    invalid: [
      [() => ({}), 'idp_metadata'],
      [() => ({ idp_metadata: '<md:EntityDescriptor' }), 'saml.idp_metadata'],
      [() => ({ idp_metadata: '<!DOCTYPE x [<!ENTITY a "b">]><x/>' }), 'saml.idp_metadata'],
      [() => ({ idp_metadata: '<html><body/></html>' }), 'saml.idp_metadata'],
      [() => ({ idp_metadata: IDP_METADATA, entity_id: 'https://sp.example.com' }), 'entity_id'],
      [() => ({ idp_metadata: IDP_METADATA, request_signing_certificate_pem: 'x' }), 'request_signing_certificate_pem'],
      [() => ({ idp_metadata: IDP_METADATA, nameid_format: 'urn:x' }), 'nameid_format'],
    ],
  },
  {
    name: 'oidc',
    on: 'route',
    valid: () => ({ issuer: 'https://accounts.example.com', client_id: 'c1', client_secret: 's3cret-oidc', scopes: ['openid', 'email'] }),
    expected: () => ({ ...session, issuer: 'https://accounts.example.com', client_id: 'c1', scopes: ['openid', 'email'] }),
    other: () => ({ issuer: 'https://login.example.org/tenant', client_id: 'c2', client_secret: 'other', options_passthrough: true, maximum_duration: 86400 }),
    otherExpected: () => ({ ...session, options_passthrough: true, maximum_duration: 86400, issuer: 'https://login.example.org/tenant', client_id: 'c2', scopes: [] }),
    invalid: [
      [() => ({ client_id: 'c', client_secret: 's' }), 'issuer'],
      [() => ({ issuer: 'not a url', client_id: 'c', client_secret: 's' }), 'oidc.issuer'],
      [() => ({ issuer: 'ftp://x.example.com', client_id: 'c', client_secret: 's' }), 'oidc.issuer'],
      [() => ({ issuer: 'https://x.example.com', client_id: 'c' }), 'oidc.client_secret'],
      [() => ({ issuer: 'https://x.example.com', client_secret: 's' }), 'client_id'],
    ],
  },
  enabledOnly('websocket_tcp_converter'),
];

describe.each(ENGINES)('module contract (%s)', (engine) => {
  let svc: TestService;
  beforeAll(async () => { svc = await startTestService(engine); }, 60_000);
  afterAll(async () => { await svc?.close(); });

  describe.each(CASES)('$name', (m) => {
    // One account per module; each test gets its own owner (edge, or route on the shared edge).
    let c: TestClient;
    let fx: Omit<Fx, 'ownerId'>;
    let edgeId: string;
    beforeAll(async () => {
      c = await svc.account();
      const [ca1, ca2, fo1, fo2] = m.on === 'edge'
        ? [(await newCa(c)).id, (await newCa(c, CA_PEM_2)).id, '', '']
        : ['', '', (await newFailover(c)).id, (await newFailover(c)).id];
      fx = { ca1, ca2, fo1, fo2, base: svc.url };
      edgeId = (await newEdge(c)).id;
    });
    async function setup(): Promise<{ c: TestClient; f: Fx; owner: string }> {
      if (m.on === 'edge') {
        const e = await newEdge(c);
        return { c, f: { ...fx, ownerId: e.id }, owner: `/edges/https/${e.id}` };
      }
      const r = await newRoute(c, edgeId);
      return { c, f: { ...fx, ownerId: r.id }, owner: `/edges/https/${edgeId}/routes/${r.id}` };
    }

    it('PUT → GET → PATCH of the owner → DELETE → GET 404', async () => {
      const { c, f, owner } = await setup();
      const url = `${owner}/${m.name}`;
      expectRejected(await c.get(url), m.name, 404);
      const put = await c.put(url, m.valid(f));
      expect(put.status, put.text).toBe(200);
      expect(put.body).toEqual(m.expected(f));
      const got = await c.get(url);
      expect(got.status).toBe(200);
      expect(got.body).toEqual(put.body);
      expect((await c.get(owner)).body[m.name]).toEqual(put.body);

      const patched = await c.patch(owner, { [m.name]: m.other(f) });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body[m.name]).toEqual(m.otherExpected(f));
      expect((await c.get(url)).body).toEqual(m.otherExpected(f));
      // null and omitted leave the module as it is: PATCH never deletes one.
      expect((await c.patch(owner, { [m.name]: null })).body[m.name]).toEqual(m.otherExpected(f));
      expect((await c.patch(owner, { description: 'kept' })).body[m.name]).toEqual(m.otherExpected(f));

      const del = await c.delete(url);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      expectRejected(await c.get(url), m.name, 404);
      expectRejected(await c.delete(url), m.name, 404);
      expect((await c.get(owner)).body[m.name]).toBeNull();
    });

    it('accepts the {"module": …} wrapper with the path ids beside it', async () => {
      const { c, f, owner } = await setup();
      const ids = m.on === 'edge' ? { id: f.ownerId } : { id: f.ownerId, edge_id: owner.split('/')[3] };
      const put = await c.put(`${owner}/${m.name}`, { module: m.valid(f), ...ids });
      expect(put.status, put.text).toBe(200);
      expect(put.body).toEqual(m.expected(f));
      // A wrapper holding no object is refused, and the module kept: `[]` once read as `{}` (the defaults).
      const bad = await c.put(`${owner}/${m.name}`, { module: [] });
      expect(bad.status, bad.text).toBe(400);
      expect((await c.get(`${owner}/${m.name}`)).body).toEqual(m.expected(f));
    });

    it('is accepted inline when its owner is created', async () => {
      const { c, f } = await setup();
      if (m.on === 'edge') {
        const e = await newEdge(c, { [m.name]: m.valid(f) });
        expect(e[m.name]).toEqual(m.expected({ ...f, ownerId: e.id }));
      } else {
        const r = await newRoute(c, edgeId, { [m.name]: m.valid(f) });
        expect(r[m.name]).toEqual(m.expected({ ...f, ownerId: r.id }));
        const edge = (await c.get(`/edges/https/${edgeId}`)).body;
        expect(edge.routes.find((x: Body) => x.id === r.id)[m.name]).toEqual(r[m.name]);
      }
    });

    it('rejects invalid values with a 400 naming the field, and stores nothing', async () => {
      const { c, f, owner } = await setup();
      for (const [body, field] of m.invalid) {
        expectRejected(await c.put(`${owner}/${m.name}`, body(f)), field);
        expectRejected(await c.patch(owner, { [m.name]: body(f) }), field);
      }
      expectRejected(await c.get(`${owner}/${m.name}`), m.name, 404);
      const [body, field] = m.invalid[0];
      if (m.on === 'edge') expectRejected(await c.post('/edges/https', { [m.name]: body(f) }), field);
      else expectRejected(await c.post(`${owner.replace(/\/[^/]+$/, '')}`, { match_type: 'exact_path', match: '/x', [m.name]: body(f) }), field);
    });
  });
});
