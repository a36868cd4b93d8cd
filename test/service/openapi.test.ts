import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KINDS } from '../../src/kinds/registry.js';
import { ApplicationUsers } from '../../src/service/routes/application-users.js';
import { Resources } from '../../src/service/writes/resources.js';
import { collectionPath } from '../../src/contract/paths.js';
import { CA_PEM, fakeId, hostport, IDP_METADATA, newCa, newEdge, newRoute } from '../helpers/edges.js';
import { SpecChecker } from '../helpers/openapi.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

/** The operations of the API specification (api-spec.md, "Endpoints"). */
const SPEC_OPERATIONS = [
  'post /backends/failover', 'get /backends/failover/{id}', 'get /backends/failover', 'patch /backends/failover/{id}', 'delete /backends/failover/{id}',
  'post /certificate_authorities', 'get /certificate_authorities/{id}', 'get /certificate_authorities', 'patch /certificate_authorities/{id}', 'delete /certificate_authorities/{id}',
  'post /abuse_reports', 'get /abuse_reports/{id}',
  'post /edges/https', 'get /edges/https/{id}', 'get /edges/https', 'patch /edges/https/{id}', 'delete /edges/https/{id}',
  'get /app/users/{id}', 'get /app/users', 'delete /app/users/{id}',
];

const ROUTE_BODY = {
  backend: { backend_id: fakeId('bkdhr') },
  ip_restriction: { ip_policy_ids: [fakeId('ipp')] },
  circuit_breaker: { num_buckets: 12 },
  compression: {},
  request_headers: { add: { 'X-One': '1', 'x-two': '2' }, remove: ['X-Gone'] },
  response_headers: { add: { 'x-b': 'b', 'x-a': 'a' } },
  webhook_verification: { provider: 'github', secret: 's3cret-webhook' },
  oauth: { provider: { github: { client_id: 'id1', client_secret: 's3cret-oauth', scopes: ['read:org'], email_addresses: ['Ann@Example.COM'], teams: ['acme/devs'], organizations: ['acme'] } } },
  websocket_tcp_converter: {},
};

describe.each(ENGINES)('the OpenAPI document on %s', (engine) => {
  let svc: TestService;
  let c: TestClient;
  let doc: any;
  beforeAll(async () => {
    svc = await startTestService(engine);
    c = await svc.account({ abuseReports: true });
    const res = await fetch(svc.url + '/openapi.json');
    expect(res.status).toBe(200);
    doc = await res.json();
  });
  afterAll(async () => { await svc?.close(); });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes every operation of the spec and of every kind: params, query, bodies, responses, errors, auth and the version header', () => {
    const ops: string[] = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) => Object.keys(item).map((m) => `${m} ${path}`));
    expect(ops).toEqual(expect.arrayContaining(SPEC_OPERATIONS));
    let count = 0;
    for (const kind of KINDS) {
      const collection = kind.path.replace(/:(\w+)/g, '{$1}');
      const item = `${collection}/{id}`;
      const expected: [string, string, number, boolean][] = [];
      const has = new Set(kind.operations);
      if (has.has('create')) expected.push(['post', collection, 201, true]);
      if (has.has('list')) expected.push(['get', collection, 200, false]);
      if (has.has('get')) expected.push(['get', item, 200, false]);
      if (has.has('update')) expected.push(['patch', item, 200, true]);
      if (has.has('delete')) expected.push(['delete', item, 204, false]);
      for (const m of kind.modules ?? []) expected.push(['put', `${item}/${m.name}`, 200, true], ['get', `${item}/${m.name}`, 200, false], ['delete', `${item}/${m.name}`, 204, false]);
      for (const [method, path, status, body] of expected) {
        const op = doc.paths[path]?.[method];
        expect(op, `${method} ${path}`).toBeDefined();
        count++;
        expect(op.operationId).toMatch(/^[a-z]+[A-Z]\w+$/);
        const params = op.parameters as { in: string; name: string; required?: boolean; schema: { pattern?: string } }[];
        for (const p of [...path.matchAll(/\{(\w+)\}/g)].map((x) => x[1])) {
          expect(params.find((x) => x.in === 'path' && x.name === p), `${method} ${path} ${p}`).toMatchObject({ required: true, schema: { pattern: expect.any(String) } });
        }
        expect(params.find((x) => x.in === 'header')).toMatchObject({ name: 'Service-Version', required: true, schema: { enum: ['2'] } });
        if (method === 'get' && path === collection) {
          expect(params.filter((x) => x.in === 'query').map((x) => x.name).sort()).toEqual(['before_id', 'limit']);
          expect(op.responses['200'].headers?.Link?.schema, `${path} Link`).toEqual({ type: 'string' });
        }
        expect(op.security).toEqual([{ apiKey: [] }]);
        expect(Boolean(op.requestBody), `${method} ${path} body`).toBe(body);
        if (body) expect(op.requestBody.content['application/json'].schema).toMatchObject({ type: 'object', properties: expect.any(Object) });
        const ok = op.responses[String(status)];
        expect(ok, `${method} ${path} ${status}`).toBeDefined();
        if (status !== 204) expect(ok.content['application/json'].schema).toMatchObject({ type: 'object', properties: expect.any(Object) });
        for (const range of ['4XX', '5XX']) expect(op.responses[range].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ApiError' });
      }
    }
    expect(count).toBeGreaterThan(60);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.schemas.ApiError.required).toEqual(['error_code', 'status_code', 'msg', 'details']);
    // Ops routes take no key and no version header.
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect(doc.paths[path].get.security).toBeUndefined();
      expect(doc.paths[path].get.parameters ?? []).toEqual([]);
    }
    // No secret is ever in a response schema.
    // (Property names: a field's description may name a secret it goes with.)
    const names = new Set<string>();
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') {
        const o = v as Record<string, unknown>;
        if (o.properties && typeof o.properties === 'object') for (const k of Object.keys(o.properties)) names.add(k);
        Object.values(o).forEach(walk);
      }
    };
    walk(Object.values(doc.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.responses)));
    expect(names.has('backends')).toBe(true);
    for (const secret of ['client_secret', 'secret', 'request_signing_key_pem']) expect(names.has(secret), secret).toBe(false);
  });

  it('serialises responses through their schemas byte for byte as before, and never sends a field the schema does not name', async () => {
    const resources = new Resources(svc.db, { vendorPrefix: 'service' });
    const caller = { accountId: c.accountId, baseUrl: svc.url };
    const ca = await newCa(c, CA_PEM);
    const edge = await newEdge(c, {
      description: 'd', metadata: '{"m":1}',
      mutual_tls: { certificate_authority_ids: [ca.id] }, tls_termination: { min_version: '1.3' },
    });
    const route = await newRoute(c, edge.id, ROUTE_BODY);
    const saml = await newRoute(c, edge.id, { saml: { idp_metadata: IDP_METADATA, authorized_groups: ['g'] } });
    const failover = (await c.post('/backends/failover', { backends: [fakeId('bkdhr')], description: 'f' })).body;
    const report = (await c.post('/abuse_reports', { urls: [`https://${hostport().split(':')[0]}/x`], metadata: 'm' })).body;
    const users = new ApplicationUsers(svc.db);
    const { user } = await users.record({ account_id: c.accountId, identity_provider: { name: 'GitHub', url: 'https://github.com' }, provider_user_id: 'u1', email: 'a@b.c', last_login: '2026-01-01T00:00:00Z' });
    const kind = (name: string) => KINDS.find((k) => k.name === name)!;
    const checks: [string, () => Promise<unknown>][] = [
      [`/certificate_authorities/${ca.id}`, () => resources.get(kind('certificateAuthority'), caller, ca.id)],
      [`/edges/https/${edge.id}`, () => resources.get(kind('httpsEdge'), caller, edge.id)],
      [`/edges/https/${edge.id}/routes/${route.id}`, () => resources.get(kind('httpsEdgeRoute'), caller, route.id, edge.id)],
      [`/edges/https/${edge.id}/routes/${saml.id}`, () => resources.get(kind('httpsEdgeRoute'), caller, saml.id, edge.id)],
      [`/backends/failover/${failover.id}`, () => resources.get(kind('failoverBackend'), caller, failover.id)],
      [`/abuse_reports/${report.id}`, () => resources.get(kind('abuseReport'), caller, report.id)],
      [`/app/users/${user.id}`, () => resources.get(kind('applicationUser'), caller, user.id as string)],
      [`/edges/https/${edge.id}/routes/${route.id}/oauth`, () => resources.getModule(kind('httpsEdgeRoute'), kind('httpsEdgeRoute').modules!.find((m) => m.name === 'oauth')!, caller, route.id, edge.id)],
    ];
    for (const k of ['httpsEdge', 'certificateAuthority', 'failoverBackend', 'applicationUser']) {
      const def = kind(k);
      checks.push([def.path + '?limit=1', async () => {
        const page = await resources.list(def, caller, { limit: 1 });
        const base = svc.url + collectionPath(def, null);
        return { [def.listKey!]: page.items, uri: base, next_page_uri: page.more && page.lastId ? `${base}?before_id=${page.lastId}&limit=1` : null };
      }]);
    }
    for (const [path, expected] of checks) {
      const res = await c.get(path);
      expect(res.status, path).toBe(200);
      const want = await expected();
      if (/^\/(abuse_reports|app\/users)/.test(path)) {
        // Nested objects of plain fields came in the database's jsonb key order (`{status, hostname}`,
        // `{url, name}`) on a GET and in request order on a create: now in the schema's order, always.
        expect(res.body, path).toEqual(want);
        expect(res.text).toMatch(/"hostnames":\[\{"hostname":|"identity_provider":\{"name":/);
      } else {
        expect(res.text, path).toBe(JSON.stringify(want));
      }
    }

    // A field that got into a stored object (an old version's, a bug's) is not sent: the schema does not name it.
    await svc.db.query(
      `UPDATE objects SET body = jsonb_set(jsonb_set(body, '{oauth,provider,github,refresh_token}', '"leaked-token"'), '{stray}', '"leaked-field"') WHERE id = $1`,
      [route.id],
    );
    for (const path of [`/edges/https/${edge.id}/routes/${route.id}`, `/edges/https/${edge.id}/routes/${route.id}/oauth`, `/edges/https/${edge.id}`]) {
      const res = await c.get(path);
      expect(res.status).toBe(200);
      expect(res.text).not.toContain('leaked');
    }
    expect(JSON.stringify(await resources.get(kind('httpsEdgeRoute'), caller, route.id, edge.id))).toContain('leaked-token');
  });

  it('lets the test client check every response against the document (a wrong one is caught)', () => {
    const checker = new SpecChecker(doc);
    expect(checker.check('GET', '/edges/https/edghts_x', 200, 'application/json', '{"id":"edghts_x"}')).toMatch(/does not match its schema/);
    expect(checker.check('GET', '/nope', 404, 'application/json; charset=utf-8', '{"error_code":"ERR_NOT_FOUND","status_code":404,"msg":"m","details":{"operation_id":"op_1"}}')).toBeNull();
    expect(checker.check('GET', '/nope', 404, 'application/json', '{"error":"x"}')).toMatch(/does not match/);
    expect(checker.check('DELETE', '/certificate_authorities/ca_x', 204, null, '')).toBeNull();
  });
});
