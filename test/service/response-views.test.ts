import fc from 'fast-check';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getViews, updateBody } from '../../src/store/objects.js';
import { CA_PEM, fakeId, IDP_METADATA, newCa, newEdge, newRoute } from '../helpers/edges.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

/**
 * The GET of an edge is answered from views: each object's response, rendered by the service at
 * its last write and stored with it (migration 008). Whatever was written and in whatever order,
 * that answer must be byte for byte the one the service shapes from the stored bodies when there
 * are no views (rows written before the migration, another base URL, another release).
 */

/** Text that JSON and jsonb escape differently if anything does: quotes, backslashes, controls, non-ASCII. */
const text = fc.array(fc.constantFrom('a', 'Z', ' ', '"', '\\', '\\u0001', '\u0001', '\n', '\t', 'é', '日本', '😀', '</script>', '\u2028', '{"x":1}'), { maxLength: 6 }).map((a) => a.join(''));
/** Header names of different lengths and cases: jsonb keeps a map's keys in an order of its own. */
const headerMap = fc.dictionary(fc.constantFrom('x-b', 'x-a', 'X-Long-Header', 'a', 'x-aa', 'x-1', 'Zz'), fc.constantFrom('1', 'v', 'two words'), { maxKeys: 5 });

const MODULES: Record<string, fc.Arbitrary<unknown>> = {
  backend: fc.constant({ backend_id: fakeId('bkdhr') }),
  ip_restriction: fc.array(fc.constant(null).map(() => fakeId('ipp')), { minLength: 1, maxLength: 3 }).map((ids) => ({ ip_policy_ids: ids })),
  circuit_breaker: fc.record({ num_buckets: fc.integer({ min: 1, max: 128 }), error_threshold_percentage: fc.constantFrom(0.5, 0.25, 1) }),
  compression: fc.record({ enabled: fc.boolean() }),
  request_headers: fc.record({ add: headerMap, remove: fc.subarray(['x-gone', 'X-Other']) }),
  response_headers: fc.record({ add: headerMap }),
  webhook_verification: fc.constant({ provider: 'github', secret: 's3cret-webhook' }),
  oauth: fc.constant({ provider: { github: { client_id: 'id1', client_secret: 's3cret-oauth', scopes: ['read:org', 'user'], email_domains: ['example.com', 'b.example'] } } }),
  saml: fc.constant({ idp_metadata: IDP_METADATA, authorized_groups: ['g', 'h'] }),
  websocket_tcp_converter: fc.constant({}),
};
const modules = fc.subarray(Object.keys(MODULES), { maxLength: 4 })
  // oauth, saml and oidc are one slot (one of them at most).
  .filter((names) => names.filter((n) => n === 'oauth' || n === 'saml').length <= 1)
  .chain((names) => fc.record(Object.fromEntries(names.map((n) => [n, MODULES[n]]))));

type Op =
  | { op: 'route'; description: string; modules: Record<string, unknown> }
  | { op: 'patch-edge'; description: string }
  | { op: 'patch-route'; n: number; description: string; modules: Record<string, unknown> }
  | { op: 'put-module'; n: number; modules: Record<string, unknown> }
  | { op: 'delete-module'; n: number }
  | { op: 'delete-route'; n: number };

const ops = fc.array(fc.oneof(
  fc.record({ op: fc.constant('route' as const), description: text, modules }),
  fc.record({ op: fc.constant('patch-edge' as const), description: text }),
  fc.record({ op: fc.constant('patch-route' as const), n: fc.nat(), description: text, modules }),
  fc.record({ op: fc.constant('put-module' as const), n: fc.nat(), modules }),
  fc.record({ op: fc.constant('delete-module' as const), n: fc.nat() }),
  fc.record({ op: fc.constant('delete-route' as const), n: fc.nat() }),
), { minLength: 1, maxLength: 8 });

/** A GET with another Host header than the client's: another base URL. */
function getWithHost(url: string, path: string, key: string, host: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url + path, { headers: { authorization: `Bearer ${key}`, host, 'service-version': '2' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, text: body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe.each(ENGINES)('stored response views on %s', (engine) => {
  let svc: TestService;
  let c: TestClient;
  beforeAll(async () => {
    svc = await startTestService(engine);
    c = await svc.account();
  });
  afterAll(async () => svc?.close());

  /** The edge's GET as the service shapes it from the stored bodies: its views and its routes' cleared first. */
  async function shapedFromBodies(edgeId: string): Promise<{ text: string; etag: string | null }> {
    await svc.db.query('UPDATE objects SET view = NULL, view_for = NULL WHERE id = $1 OR parent_id = $1', [edgeId]);
    const res = await c.get(`/edges/https/${edgeId}`);
    expect(res.status).toBe(200);
    return { text: res.text, etag: res.headers.get('etag') };
  }

  it('answers an edge with what the service shapes from the bodies, byte for byte, after any writes', async () => {
    const ca = await newCa(c, CA_PEM);
    await fc.assert(fc.asyncProperty(text, ops, async (description, steps) => {
      const edge = await newEdge(c, { description, mutual_tls: { certificate_authority_ids: [ca.id] } });
      const routes: string[] = [];
      const pick = (n: number) => routes[n % routes.length];
      for (const s of steps) {
        let res;
        if (s.op === 'route') {
          routes.push((await newRoute(c, edge.id, { description: s.description, ...s.modules })).id);
          continue;
        } else if (s.op === 'patch-edge') res = await c.patch(`/edges/https/${edge.id}`, { description: s.description });
        else if (routes.length === 0) continue;
        else if (s.op === 'patch-route') res = await c.patch(`/edges/https/${edge.id}/routes/${pick(s.n)}`, { description: s.description, ...s.modules });
        else if (s.op === 'put-module') {
          const [name, body] = Object.entries(s.modules)[0] ?? ['compression', { enabled: false }];
          res = await c.put(`/edges/https/${edge.id}/routes/${pick(s.n)}/${name}`, body);
        } else if (s.op === 'delete-module') {
          res = await c.delete(`/edges/https/${edge.id}/routes/${pick(s.n)}/compression`);
          if (res.status === 404) continue; // not configured
        } else {
          res = await c.delete(`/edges/https/${edge.id}/routes/${pick(s.n)}`);
          routes.splice(routes.indexOf(pick(s.n)), 1);
        }
        // Two authentication modules on one route: refused, nothing written.
        if (res.status === 400 && /at most one authentication module/.test(res.body.msg)) continue;
        expect(res.status, res.text).toBeLessThan(300);
      }
      const fromViews = await c.get(`/edges/https/${edge.id}`);
      expect(fromViews.status).toBe(200);
      expect(fromViews.body.routes.map((r: { id: string }) => r.id)).toEqual([...routes].sort());
      // Sent from views: every one of them is there, rendered for this base.
      const stored = await getViews(svc.db, c.accountId, 'httpsEdge', edge.id, 'httpsEdgeRoute', (await svc.db.query<{ view_for: string }>('SELECT view_for FROM objects WHERE id = $1', [edge.id])).rows[0].view_for);
      expect(stored?.view).not.toBeNull();
      const shaped = await shapedFromBodies(edge.id);
      expect(fromViews.text).toBe(shaped.text);
      expect(fromViews.headers.get('etag')).toBe(shaped.etag);
      expect(fromViews.headers.get('content-type')).toBe('application/json; charset=utf-8');
      for (const secret of ['s3cret-webhook', 's3cret-oauth']) expect(fromViews.text).not.toContain(secret);
    }), { numRuns: engine === 'pglite' ? 12 : 20 });
  });

  it('does not send views rendered for another base URL, or by another revision, or left from an earlier body', async () => {
    const edge = await newEdge(c, { description: 'views' });
    const route = await newRoute(c, edge.id, { request_headers: { add: { 'x-b': '2', 'x-a': '1' } } });
    const key = c.apiKey!;
    const other = await getWithHost(svc.url, `/edges/https/${edge.id}`, key, 'edge-api.example.test:8443');
    expect(other.status).toBe(200);
    expect(other.text).toContain('"uri":"http://edge-api.example.test:8443/edges/https/');
    expect(other.text).not.toContain(svc.url);

    // A route whose view another release rendered: the edge is shaped from the bodies.
    await svc.db.query(`UPDATE objects SET view = '{"stale":true}', view_for = 'older-revision ' || substr(view_for, strpos(view_for, ' ') + 1) WHERE id = $1`, [route.id]);
    const mixed = await c.get(`/edges/https/${edge.id}`);
    expect(mixed.text).not.toContain('stale');
    expect(mixed.body.routes[0].request_headers.add).toEqual({ 'x-a': '1', 'x-b': '2' });

    // A body written as a release from before views writes it (no view named): the view goes with it.
    await svc.db.query(`UPDATE objects SET body = jsonb_set(body, '{description}', '"by an older release"'), version = version + 1 WHERE id = $1`, [route.id]);
    const older = await c.get(`/edges/https/${edge.id}`);
    expect(older.body.routes[0].description).toBe('by an older release');
    expect((await svc.db.query<{ view: string | null }>('SELECT view FROM objects WHERE id = $1', [route.id])).rows[0].view).toBeNull();

    // A body written without a view (as abuse processing writes its reports) leaves none behind.
    const row = (await svc.db.query<{ body: Record<string, unknown> }>('SELECT body FROM objects WHERE id = $1', [edge.id])).rows[0];
    await updateBody(svc.db, edge.id, { ...row.body, description: 'written without a view' });
    const after = await c.get(`/edges/https/${edge.id}`);
    expect(after.body.description).toBe('written without a view');
    expect((await svc.db.query<{ view: string | null }>('SELECT view FROM objects WHERE id = $1', [edge.id])).rows[0].view).toBeNull();
  });

  it('keeps a header named __proto__ in the view, as in the body', async () => {
    const edge = await newEdge(c);
    const route = await newRoute(c, edge.id);
    const put = await c.put(`/edges/https/${edge.id}/routes/${route.id}/request_headers`, '{"add":{"__proto__":"kept","x-a":"1"}}');
    expect(put.status, put.text).toBe(200);
    const fromViews = await c.get(`/edges/https/${edge.id}`);
    expect(fromViews.text).toContain('"__proto__":"kept"');
    expect(fromViews.text).toBe((await shapedFromBodies(edge.id)).text);
  });

  it('answers 404 for an edge of another account, from views or not', async () => {
    const edge = await newEdge(c);
    const stranger = await svc.account();
    expect((await stranger.get(`/edges/https/${edge.id}`)).status).toBe(404);
    expect((await c.get(`/edges/https/${fakeId('edghts')}`)).status).toBe(404);
  });
});
