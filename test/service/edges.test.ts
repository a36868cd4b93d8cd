import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRejected, fakeId, hostport, IDP_METADATA, newCa, newEdge, newFailover, newRoute } from '../helpers/edges.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

describe.each(ENGINES)('HTTPS edges and routes (%s)', (engine) => {
  let svc: TestService;
  let c: TestClient;
  // The service logs at info, as in production, so the secrets test can read every line it wrote.
  const log: string[] = [];
  beforeAll(async () => {
    svc = await startTestService(engine, { logLevel: 'info', logStream: { write: (line: string) => { log.push(line); } } });
    c = await svc.account();
  }, 60_000);
  afterAll(async () => { await svc?.close(); });

  /** The stored body of an object, to check what the API never shows (carried secrets). */
  async function stored(id: string): Promise<any> {
    const { rows } = await svc.db.query<{ body: any }>('SELECT body FROM objects WHERE id = $1', [id]);
    return rows[0]?.body;
  }

  describe('edges', () => {
    it('creates, gets, lists, updates and deletes an edge', async () => {
      const hp = hostport();
      const res = await c.post('/edges/https', { description: 'web', metadata: '{"team":"a"}', hostports: [hp.toUpperCase()] });
      expect(res.status).toBe(201);
      const e = res.body;
      expect(e).toEqual({
        id: expect.stringMatching(/^edghts_[0-9A-Za-z]{27}$/),
        uri: `${svc.url}/edges/https/${e.id}`,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        description: 'web',
        metadata: '{"team":"a"}',
        hostports: [hp],
        mutual_tls: null,
        tls_termination: null,
        routes: [],
      });
      expect((await c.get(`/edges/https/${e.id}`)).body).toEqual(e);
      const list = await c.get('/edges/https?limit=1');
      expect(list.body).toMatchObject({ https_edges: [e], uri: `${svc.url}/edges/https` });

      const upd = await c.patch(`/edges/https/${e.id}`, { id: e.id, description: '', hostports: [hp, hostport()] });
      expect(upd.status, upd.text).toBe(200);
      expect(upd.body.description).toBeUndefined();
      expect(upd.body.metadata).toBe('{"team":"a"}');
      expect(upd.body.hostports).toHaveLength(2);

      expect((await c.delete(`/edges/https/${e.id}`)).status).toBe(204);
      expectRejected(await c.get(`/edges/https/${e.id}`), e.id, 404);
      expectRejected(await c.delete(`/edges/https/${e.id}`), e.id, 404);
    });

    it('follows the three update rules for modules', async () => {
      const ca = (await newCa(c)).id;
      const e = await newEdge(c, { tls_termination: { min_version: '1.3' } });
      // 1. omitted → untouched; 2. given → replaces entirely; 3. null never deletes.
      let r = await c.patch(`/edges/https/${e.id}`, { mutual_tls: { certificate_authority_ids: [ca] } });
      expect(r.body.tls_termination).toEqual({ enabled: true, terminate_at: 'edge', min_version: '1.3' });
      expect(r.body.mutual_tls.certificate_authorities).toEqual([{ id: ca, uri: `${svc.url}/certificate_authorities/${ca}` }]);
      r = await c.patch(`/edges/https/${e.id}`, { tls_termination: { enabled: false } });
      expect(r.body.tls_termination).toEqual({ enabled: false, terminate_at: 'edge', min_version: '1.2' });
      r = await c.patch(`/edges/https/${e.id}`, { tls_termination: null, mutual_tls: null });
      expect(r.body.tls_termination).not.toBeNull();
      expect(r.body.mutual_tls).not.toBeNull();
    });

    it('validates hostports, naming the one at fault', async () => {
      const bad: [unknown, string][] = [
        ['example.com', 'hostports[0]'],
        ['example.com:80', 'hostports[0]'],
        ['example.com:443x', 'hostports[0]'],
        ['localhost:443', 'hostports[0]'],
        ['1.2.3.4:443', 'hostports[0]'],
        ['-a.example.com:443', 'hostports[0]'],
        ['a..example.com:443', 'hostports[0]'],
        ['a.*.example.com:443', 'hostports[0]'],
        [`${'a'.repeat(64)}.example.com:443`, 'hostports[0]'],
        ['exa mple.com:443', 'hostports[0]'],
        [42, 'hostports[0]'],
        ['\u212a.example.com:443', 'hostports[0]'], // the Kelvin sign lower-cases to an ASCII "k"
        ['bücher.example.com:443', 'hostports[0]'], // IDN: punycode only
        // 255 characters with the wildcard's "*.": over the 253 a DNS name may have.
        [`*.${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com:443`, 'hostports[0]'],
      ];
      for (const [h, field] of bad) expectRejected(await c.post('/edges/https', { hostports: [h] }), field);
      const hp = hostport();
      expectRejected(await c.post('/edges/https', { hostports: [hp, hp.toUpperCase()] }), 'hostports[1]');
      expectRejected(await c.post('/edges/https', { hostports: 'a.example.com:443' }), 'hostports');
      const wildcard = await newEdge(c, { hostports: [`*.${hostport()}`] });
      expect(wildcard.hostports[0]).toMatch(/^\*\./);
    });

    it('serves a hostport from one edge only, across accounts, case-insensitively (409)', async () => {
      const hp = hostport();
      const first = await newEdge(c, { hostports: [hp] });
      const other = await svc.account();
      const dup = await other.post('/edges/https', { hostports: [hp.toUpperCase()] });
      expectRejected(dup, hp, 409);
      expect(dup.body.error_code).toBe('ERR_HOSTPORT_IN_USE');
      const second = await newEdge(c);
      expectRejected(await c.patch(`/edges/https/${second.id}`, { hostports: [hp] }), hp, 409);
      // Freed by an update, then by a delete.
      await c.patch(`/edges/https/${first.id}`, { hostports: [] });
      expect((await other.post('/edges/https', { hostports: [hp] })).status).toBe(201);
      const { rows } = await svc.db.query("SELECT value FROM unique_keys WHERE scope = 'hostport' AND value = $1", [hp]);
      expect(rows).toHaveLength(1);
    });

    it('refuses text the database cannot store (U+0000, unpaired surrogates), naming the field', async () => {
      expectRejected(await c.request('POST', '/edges/https', '{"description":"a\\u0000b"}'), 'description');
      expectRejected(await c.request('POST', '/edges/https', '{"metadata":"\\ud800"}'), 'metadata');
      const e = await newEdge(c);
      const r = await newRoute(c, e.id);
      expectRejected(await c.request('PUT', `/edges/https/${e.id}/routes/${r.id}/request_headers`, '{"add":{"x-\\udc00":"v"}}'), 'add.x-');
      expect((await c.post('/edges/https', { hostports: [hostport()], description: '👩‍👩‍👧 ＡＢＣ' })).status).toBe(201);
    });

    it('names a module PUT\'s problems from the object, as the same body inside a POST or PATCH does', async () => {
      const e = await newEdge(c);
      const r = await newRoute(c, e.id);
      const route = `/edges/https/${e.id}/routes/${r.id}`;
      const oauth = { provider: { google: { teams: ['a/b'] } } };
      const inline = await c.patch(route, { oauth });
      const put = await c.put(`${route}/oauth`, oauth);
      expectRejected(put, 'oauth.provider.google');
      expect(put.body.msg.replace(/\[\d+\]/, '')).toBe(inline.body.msg.replace(/\[\d+\]/, ''));
      expectRejected(await c.put(`${route}/oauth`, { provider: { github: {} }, cookie_prefix: 'a-b' }), 'oauth.cookie_prefix: must be 1 to 64 letters');
      const unknown = await c.put(`/edges/https/${e.id}/tls_termination`, { bogus: 1 });
      expectRejected(unknown, "unknown field 'tls_termination.bogus'");
      expect(unknown.body.error_code).toBe('ERR_UNKNOWN_FIELD');
      expectRejected(await c.put(`/edges/https/${e.id}/tls_termination`, { min_version: '9' }), 'tls_termination.min_version: must be one of');
    });

    it('rejects unknown fields, ids that differ from the path, and other accounts\' edges', async () => {
      const e = await newEdge(c);
      expectRejected(await c.post('/edges/https', { hostport: [] }), 'hostport');
      expectRejected(await c.patch(`/edges/https/${e.id}`, { id: fakeId('edghts') }), 'id');
      expectRejected(await c.patch(`/edges/https/${e.id}`, { routes: [] }), 'routes');
      const other = await svc.account();
      expectRejected(await other.get(`/edges/https/${e.id}`), e.id, 404);
      expectRejected(await other.patch(`/edges/https/${e.id}`, {}), e.id, 404);
      expectRejected(await other.put(`/edges/https/${e.id}/tls_termination`, {}), e.id, 404);
      expectRejected(await other.post(`/edges/https/${e.id}/routes`, { match_type: 'exact_path', match: '/' }), e.id, 404);
    });
  });

  describe('routes', () => {
    it('creates, gets, updates and deletes a route, returned inside its edge in creation order', async () => {
      const e = await newEdge(c);
      const r1 = await c.post(`/edges/https/${e.id}/routes`, { edge_id: e.id, match_type: 'exact_path', match: '/b', description: 'b' });
      expect(r1.status, r1.text).toBe(201);
      expect(r1.body).toMatchObject({
        edge_id: e.id, id: expect.stringMatching(/^edghtsrt_[0-9A-Za-z]{27}$/), match_type: 'exact_path', match: '/b', description: 'b',
        uri: `${svc.url}/edges/https/${e.id}/routes/${r1.body.id}`, backend: null, oauth: null, websocket_tcp_converter: null,
      });
      const r2 = await newRoute(c, e.id, { match: '/a' });
      const r3 = await newRoute(c, e.id, { match: '/c' });
      const edge = (await c.get(`/edges/https/${e.id}`)).body;
      expect(edge.routes.map((r: any) => r.id)).toEqual([r1.body.id, r2.id, r3.id]);
      expect(edge.routes[0]).toEqual(r1.body);
      expect((await c.get(`/edges/https/${e.id}/routes/${r2.id}`)).body).toEqual(r2);

      const upd = await c.patch(`/edges/https/${e.id}/routes/${r2.id}`, { match_type: 'exact_path', match: '/a2', metadata: 'm' });
      expect(upd.body).toMatchObject({ match_type: 'exact_path', match: '/a2', metadata: 'm' });
      expect((await c.delete(`/edges/https/${e.id}/routes/${r2.id}`)).status).toBe(204);
      expectRejected(await c.get(`/edges/https/${e.id}/routes/${r2.id}`), r2.id, 404);
      expect((await c.get(`/edges/https/${e.id}`)).body.routes.map((r: any) => r.id)).toEqual([r1.body.id, r3.id]);

      // A route is found only under its own edge.
      const other = await newEdge(c);
      expectRejected(await c.get(`/edges/https/${other.id}/routes/${r1.body.id}`), r1.body.id, 404);
      expect((await c.get(`/edges/https/${e.id}/routes`)).status).toBe(405);
    });

    it('validates match_type and match', async () => {
      const e = await newEdge(c);
      const url = `/edges/https/${e.id}/routes`;
      expectRejected(await c.post(url, { match: '/' }), 'match_type');
      expectRejected(await c.post(url, { match_type: 'exact_path' }), 'match');
      expectRejected(await c.post(url, { match_type: 'regex', match: '/' }), 'match_type');
      expectRejected(await c.post(url, { match_type: 'exact_path', match: 'blog' }), 'match');
      expectRejected(await c.post(url, { match_type: 'exact_path', match: '/a b' }), 'match');
      expectRejected(await c.post(url, { match_type: 'exact_path', match: '/a\u0085b' }), 'match'); // a C1 control character
      // Any other character, beyond the BMP too (an emoji is one code point, two UTF-16 units).
      for (const match of ['/😀', '/é/ü', '/\u00a0x']) expect((await c.post(url, { match_type: 'exact_path', match })).status, match).toBe(201);
      expectRejected(await c.post(url, { match_type: 'exact_path', match: '/' + 'a'.repeat(3000) }), 'match');
      expectRejected(await c.post(url, { match_type: 'exact_path', match: '/', edge_id: fakeId('edghts') }), 'edge_id');
      expectRejected(await c.post(url, { match_type: 'exact_path', match: '/', description: 'é'.repeat(128) }), 'description');
    });

    it('keeps a match unique within its edge (409), not across edges', async () => {
      const e = await newEdge(c);
      const r = await newRoute(c, e.id, { match: '/api' });
      const dup = await c.post(`/edges/https/${e.id}/routes`, { match_type: 'exact_path', match: '/api' });
      expectRejected(dup, '/api', 409);
      expect(dup.body.error_code).toBe('ERR_ROUTE_MATCH_IN_USE');
      const r2 = await newRoute(c, e.id, { match: '/web' });
      expectRejected(await c.patch(`/edges/https/${e.id}/routes/${r2.id}`, { match: '/api' }), '/api', 409);
      expect((await c.patch(`/edges/https/${e.id}/routes/${r.id}`, { match: '/api' })).status).toBe(200);
      await newRoute(c, (await newEdge(c)).id, { match: '/api' });
    });

    it('allows at most one of oauth, oidc and saml on a route', async () => {
      const e = await newEdge(c);
      const oidc = { issuer: 'https://id.example.com', client_id: 'c', client_secret: 's' };
      expectRejected(await c.post(`/edges/https/${e.id}/routes`, { match_type: 'exact_path', match: '/', oidc, oauth: { provider: { google: {} } } }), 'oauth');
      const r = await newRoute(c, e.id, { oidc });
      expectRejected(await c.put(`/edges/https/${e.id}/routes/${r.id}/saml`, { idp_metadata: IDP_METADATA }), 'saml');
      expectRejected(await c.patch(`/edges/https/${e.id}/routes/${r.id}`, { oauth: { provider: { google: {} } } }), 'oauth');
      await c.delete(`/edges/https/${e.id}/routes/${r.id}/oidc`);
      expect((await c.put(`/edges/https/${e.id}/routes/${r.id}/oauth`, { provider: { google: {} } })).status).toBe(200);
    });

    it('deleting an edge deletes its routes and frees their references', async () => {
      const fo = await newFailover(c);
      const e = await newEdge(c);
      const r = await newRoute(c, e.id, { backend: { backend_id: fo.id } });
      expectRejected(await c.delete(`/backends/failover/${fo.id}`), r.id, 409);
      expect((await c.delete(`/edges/https/${e.id}`)).status).toBe(204);
      expectRejected(await c.get(`/edges/https/${e.id}/routes/${r.id}`), r.id, 404);
      expect(await stored(r.id)).toBeUndefined();
      expect((await c.delete(`/backends/failover/${fo.id}`)).status).toBe(204);
    });
  });

  describe('referential integrity', () => {
    it('requires mutual TLS CAs and route failover backends to exist in the account (400)', async () => {
      const other = await svc.account();
      const foreignCa = (await newCa(other)).id;
      const foreignFo = (await newFailover(other)).id;
      const e = await newEdge(c);
      let res = await c.post('/edges/https', { hostports: [hostport()], mutual_tls: { certificate_authority_ids: [foreignCa] } });
      expectRejected(res, foreignCa);
      expect(res.body.error_code).toBe('ERR_INVALID_REFERENCE');
      expectRejected(await c.put(`/edges/https/${e.id}/mutual_tls`, { certificate_authority_ids: [fakeId('ca')] }), 'certificate_authority_ids[0]');
      res = await c.post(`/edges/https/${e.id}/routes`, { match_type: 'exact_path', match: '/', backend: { backend_id: foreignFo } });
      expectRejected(res, 'backend.backend_id');
      // Other backend kinds are not stored here: kept as given.
      const r = await newRoute(c, e.id, { backend: { backend_id: fakeId('bkdtg') } });
      expect(r.backend.backend.uri).toMatch(/\/backends\/tunnel_group\/bkdtg_/);
    });

    it('refuses to delete a CA or failover backend still in use (409 naming the users)', async () => {
      const ca = (await newCa(c)).id;
      const fo = (await newFailover(c)).id;
      const e = await newEdge(c, { mutual_tls: { certificate_authority_ids: [ca] } });
      const r = await newRoute(c, e.id, { backend: { backend_id: fo } });
      let res = await c.delete(`/certificate_authorities/${ca}`);
      expectRejected(res, e.id, 409);
      expect(res.body.msg).toContain('HTTPS edge');
      res = await c.delete(`/backends/failover/${fo}`);
      expectRejected(res, r.id, 409);
      expect(res.body.msg).toContain(e.id);
      await c.delete(`/edges/https/${e.id}/mutual_tls`);
      await c.delete(`/edges/https/${e.id}/routes/${r.id}/backend`);
      expect((await c.delete(`/certificate_authorities/${ca}`)).status).toBe(204);
      expect((await c.delete(`/backends/failover/${fo}`)).status).toBe(204);
    });
  });

  describe('secrets', () => {
    const SECRETS = ['whsec-SECRET-1', 'oauth-SECRET-2', 'oidc-SECRET-3'];

    it('never appear in any response', async () => {
      const e = await newEdge(c);
      const seen: string[] = [];
      const keep = async (p: Promise<{ text: string; status: number }>) => {
        const r = await p;
        expect(r.status, r.text).toBeLessThan(300);
        seen.push(r.text);
        return r;
      };
      const r1 = (await keep(c.post(`/edges/https/${e.id}/routes`, {
        match_type: 'path_prefix', match: '/', webhook_verification: { provider: 'slack', secret: SECRETS[0] },
        oauth: { provider: { gitlab: { client_id: 'id', client_secret: SECRETS[1] } } },
      }))) as any;
      const r2 = await newRoute(c, e.id, { oidc: { issuer: 'https://id.example.com', client_id: 'c', client_secret: SECRETS[2] } });
      const r3 = await newRoute(c, e.id, { saml: { idp_metadata: IDP_METADATA } });
      const base = `/edges/https/${e.id}/routes`;
      await keep(c.get(`${base}/${r1.body.id}`));
      await keep(c.get(`${base}/${r1.body.id}/webhook_verification`));
      await keep(c.get(`${base}/${r1.body.id}/oauth`));
      await keep(c.put(`${base}/${r1.body.id}/webhook_verification`, { provider: 'slack' }));
      await keep(c.patch(`${base}/${r2.id}`, { oidc: { issuer: 'https://id.example.com', client_id: 'c' } }));
      await keep(c.get(`${base}/${r2.id}/oidc`));
      await keep(c.get(`${base}/${r3.id}/saml`));
      await keep(c.get(`/edges/https/${e.id}`));
      await keep(c.get('/edges/https'));
      const all = seen.join('\n');
      expect(log.join('').length).toBeGreaterThan(0);
      for (const s of SECRETS) expect(all + log.join('')).not.toContain(s);
      expect(all).not.toContain('PRIVATE KEY');
      expect(all).not.toContain('client_secret');
      expect(all).not.toMatch(/"secret"/);
      expect((await stored(r3.id)).saml.request_signing_key_pem).toMatch(/PRIVATE KEY/);
    });

    it('GET-modify-PUT keeps a stored secret; a new provider or client needs a new one', async () => {
      const e = await newEdge(c);
      const r = await newRoute(c, e.id, {
        webhook_verification: { provider: 'github', secret: 'gh-1' },
        oauth: { provider: { github: { client_id: 'app-1', client_secret: 'oa-1' } } },
      });
      const url = `/edges/https/${e.id}/routes/${r.id}`;
      // The module as read, changed and written back: the secret stays.
      const wv = (await c.get(`${url}/webhook_verification`)).body;
      expect((await c.put(`${url}/webhook_verification`, { ...wv, enabled: false })).status).toBe(200);
      expect((await stored(r.id)).webhook_verification.secret).toBe('gh-1');
      // A secret given replaces the stored one.
      await c.put(`${url}/webhook_verification`, { provider: 'GITHUB', secret: 'gh-2' });
      expect((await stored(r.id)).webhook_verification.secret).toBe('gh-2');
      // Another provider: the old secret does not apply.
      expectRejected(await c.put(`${url}/webhook_verification`, { provider: 'stripe' }), 'webhook_verification.secret');
      // sns takes none: the stored one is dropped.
      expect((await c.put(`${url}/webhook_verification`, { provider: 'sns' })).status).toBe(200);
      expect((await stored(r.id)).webhook_verification.secret).toBeUndefined();

      const oa = (await c.get(`${url}/oauth`)).body;
      oa.provider.github.email_domains = ['example.com'];
      expect((await c.patch(url, { oauth: oa })).status).toBe(200);
      expect((await stored(r.id)).oauth.provider.github.client_secret).toBe('oa-1');
      expectRejected(await c.put(`${url}/oauth`, { provider: { github: { client_id: 'app-2' } } }), 'oauth.provider.github.client_secret');
      // Switching provider carries nothing over.
      await c.put(`${url}/oauth`, { provider: { google: {} } });
      expect(JSON.stringify(await stored(r.id))).not.toContain('oa-1');
    });

    it('keeps a route\'s SAML signing certificate across updates', async () => {
      const e = await newEdge(c);
      const r = await newRoute(c, e.id, { saml: { idp_metadata: IDP_METADATA } });
      const url = `/edges/https/${e.id}/routes/${r.id}/saml`;
      const again = await c.put(url, { idp_metadata: IDP_METADATA, force_authn: true });
      expect(again.body.request_signing_certificate_pem).toBe(r.saml.request_signing_certificate_pem);
      await c.delete(url);
      const fresh = await c.put(url, { idp_metadata: IDP_METADATA });
      expect(fresh.body.request_signing_certificate_pem).not.toBe(r.saml.request_signing_certificate_pem);
      const other = await newRoute(c, e.id, { saml: { idp_metadata: IDP_METADATA } });
      expect(other.saml.request_signing_certificate_pem).not.toBe(fresh.body.request_signing_certificate_pem);
    });
  });
});
