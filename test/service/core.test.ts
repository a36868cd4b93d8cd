import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/service/app.js';
import { revokeKey } from '../../src/service/auth.js';
import type { Db } from '../../src/store/db.js';
import { ENGINES, startTestService, TestClient, type TestService } from '../helpers/service.js';
import { CA_PEM } from '../helpers/edges.js';

function expectError(res: { status: number; body: any; headers: Headers }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({
    error_code: code,
    status_code: status,
    msg: expect.any(String),
    details: expect.objectContaining({ operation_id: res.headers.get('operation-id') }),
  });
  expect(res.body.details.operation_id).toMatch(/^op_[0-9A-Za-z]{27}$/);
}

/** Sends `request` as it is on a new connection to `url` and answers the whole response: status, headers, parsed body. */
function raw(url: string, request: string): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname, () => sock.write(request));
    let text = '';
    sock.on('data', (d) => (text += d));
    sock.on('error', reject);
    sock.on('close', () => {
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      let body: unknown = rest.join('\r\n\r\n');
      try { body = JSON.parse(body as string); } catch { /* as text */ }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

describe.each(ENGINES)('service core on %s', (engine) => {
  let svc: TestService;
  let c: TestClient;
  beforeAll(async () => {
    svc = await startTestService(engine, { versionHeaders: ['Service-Version', 'Acme-Version'] });
    c = await svc.account();
  });
  afterAll(async () => { await svc?.close(); });

  it('requires the version header and accepts each configured name, case-insensitively', async () => {
    expectError(await c.request('GET', '/backends/failover', undefined, { 'service-version': null }), 400, 'ERR_VERSION_MISSING');
    const wrong = await c.request('GET', '/backends/failover', undefined, { 'service-version': '1' });
    expectError(wrong, 400, 'ERR_VERSION_UNSUPPORTED');
    expect(wrong.body.msg).toMatch(/version 2/);
    const alt = await c.request('GET', '/backends/failover', undefined, { 'service-version': null, 'ACME-VERSION': '2' });
    expect(alt.status).toBe(200);
  });

  it('answers 401 with WWW-Authenticate for missing, malformed, unknown and revoked keys', async () => {
    const anon = new TestClient(svc.url, null);
    const missing = await anon.get('/backends/failover');
    expectError(missing, 401, 'ERR_UNAUTHORIZED');
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expectError(await c.request('GET', '/backends/failover', undefined, { authorization: 'Basic abc' }), 401, 'ERR_UNAUTHORIZED');
    const unknown = await new TestClient(svc.url, 'ep_not_a_key').get('/backends/failover');
    expectError(unknown, 401, 'ERR_UNAUTHORIZED');
    expect(unknown.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  it('stops accepting a revoked key once the auth cache lapses', async () => {
    const short = await startTestService(engine, { authCacheMs: 50 }, svc);
    try {
      const k = await short.account();
      expect((await k.get('/backends/failover')).status).toBe(200);
      const { rows } = await short.db.query<{ id: string }>('SELECT id FROM api_keys WHERE account_id = $1', [k.accountId]);
      expect(await revokeKey(short.db, rows[0].id)).toBe(true);
      await new Promise((r) => setTimeout(r, 80));
      expectError(await k.get('/backends/failover'), 401, 'ERR_UNAUTHORIZED');
    } finally {
      await short.close();
    }
  });

  it('stores API keys only as hashes', async () => {
    const { rows } = await svc.db.query<{ key_hash: string }>('SELECT key_hash FROM api_keys WHERE account_id = $1', [c.accountId]);
    expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0].key_hash).not.toContain(c.apiKey!);
  });

  it('answers unknown paths with 404 and known paths with a wrong method with 405 and Allow', async () => {
    expectError(await c.get('/nope'), 404, 'ERR_NOT_FOUND');
    const put = await c.put('/backends/failover', {});
    expectError(put, 405, 'ERR_METHOD_NOT_ALLOWED');
    expect(put.headers.get('allow')).toBe('POST, GET, HEAD');
    const post = await c.post('/certificate_authorities/ca_' + 'a'.repeat(27), {});
    expectError(post, 405, 'ERR_METHOD_NOT_ALLOWED');
    expect(post.headers.get('allow')).toBe('GET, PATCH, DELETE, HEAD');
  });

  it('answers ids and cursors no object can have (U+0000, lone surrogates, bad encoding, over-long) with 404 or 400, never a 500', async () => {
    const ca = await c.post('/certificate_authorities', { ca_pem: CA_PEM });
    expect(ca.status).toBe(201);
    const edge = await c.post('/edges/https', {});
    expect(edge.status).toBe(201);
    // Each of these once reached the database, which refused the text: 500.
    for (const [method, path, body] of [
      ['GET', '/certificate_authorities/%00'],
      ['PATCH', '/certificate_authorities/ca_%00', {}],
      ['DELETE', '/backends/failover/a%00b'],
      ['GET', `/edges/https/${edge.body.id}/routes/%00`],
      ['POST', '/edges/https/%00/routes', { match_type: 'path_prefix', match: '/' }],
      ['PUT', '/edges/https/%00/tls_termination', {}],
      ['PATCH', '/edges/https/%00/routes/edghtsrt_x', {}],
      ['PUT', '/edges/https/x%00y/routes/edghtsrt_x/compression', {}],
      ['GET', '/app/users/%00'],
    ] as const) {
      const res = await c.request(method, path, body);
      expect(`${method} ${path} ${res.status}`).toBe(`${method} ${path} 404`);
      expectError(res, 404, 'ERR_NOT_FOUND');
    }
    const cursor = await c.get('/certificate_authorities?before_id=%00');
    expectError(cursor, 400, 'ERR_INVALID_QUERY');
    expect(cursor.body.msg).toContain('before_id');
    // Paths fastify cannot route answer in the API's own error shape, with an operation id.
    for (const path of ['/edges/https/%ED%A0%80', '/edges/https/%zz', `/backends/failover/${'a'.repeat(150)}`]) {
      const res = await c.get(path);
      expectError(res, 404, 'ERR_NOT_FOUND');
      expect(res.body.msg).toMatch(/^no such path: GET \//);
      expect(res.headers.get('operation-id')).toBe(res.body.details.operation_id);
    }
    // The objects are still there, untouched.
    expect((await c.get(`/certificate_authorities/${ca.body.id}`)).status).toBe(200);
    expect((await c.get(`/edges/https/${edge.body.id}`)).status).toBe(200);
  });

  it('refuses a body nested deeper than any field of the API, at once (a body of brackets once held the event loop for seconds)', async () => {
    const deep = (n: number) => `{"backends":[],"description":${'['.repeat(n)}${']'.repeat(n)}}`;
    const res = await c.request('POST', '/backends/failover', deep(400_000));
    expectError(res, 400, 'ERR_VALIDATION');
    expect(res.body.msg).toBe('body: arrays and objects nest more than 32 levels deep (no field of the API is that deep)');
    // The service answered the next request meanwhile, and within the limit the body's own checks run.
    expect((await c.get('/backends/failover')).status).toBe(200);
    expectError(await c.request('POST', '/backends/failover', deep(30)), 400, 'ERR_VALIDATION');
  });

  it('takes JSON only: 415 for other types, 400 for broken JSON, 413 over 1 MiB', async () => {
    expectError(await c.request('POST', '/backends/failover', 'backends=', { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'ERR_UNSUPPORTED_MEDIA_TYPE');
    // JSON in another charset, or compressed, would be read as UTF-8 bytes: refused as such.
    expectError(await c.request('POST', '/backends/failover', '{"backends":[]}', { 'content-type': 'application/json; charset=utf-16' }), 415, 'ERR_UNSUPPORTED_MEDIA_TYPE');
    expectError(await c.request('POST', '/backends/failover', '{"backends":[]}', { 'content-type': 'application/json', 'content-encoding': 'gzip' }), 415, 'ERR_UNSUPPORTED_MEDIA_TYPE');
    const declared = await c.request('POST', '/backends/failover', '{"backends":[]}', { 'content-type': 'application/json; charset=UTF-8' });
    expect(declared.status).toBe(201);
    expect((await c.request('DELETE', `/backends/failover/${declared.body.id}`)).status).toBe(204);
    expectError(await c.request('POST', '/backends/failover', '{"backends": [', { 'content-type': 'application/json' }), 400, 'ERR_INVALID_JSON');
    // The error says what is wrong without quoting the body back (a secret in it would be echoed).
    const broken = await c.request('POST', '/backends/failover', '{"backends": [], "description": SECRET_IN_BODY}', { 'content-type': 'application/json' });
    expectError(broken, 400, 'ERR_INVALID_JSON');
    expect(broken.body.msg).toBe("body is not valid JSON: Unexpected token 'S'");
    const big = JSON.stringify({ backends: [], description: 'x'.repeat(1024 * 1024) });
    expectError(await c.request('POST', '/backends/failover', big), 413, 'ERR_PAYLOAD_TOO_LARGE');
    const noBody = await c.request('POST', '/backends/failover', undefined, { 'content-type': 'application/json' });
    expectError(noBody, 400, 'ERR_VALIDATION');
    // Bytes that are not UTF-8 (Latin-1 "café") are refused, not stored as U+FFFD.
    const latin1 = await c.request('POST', '/backends/failover', Buffer.from('{"backends":[],"description":"caf\xe9"}', 'latin1'));
    expectError(latin1, 400, 'ERR_INVALID_JSON');
    expect(latin1.body.msg).toContain('UTF-8');
    expect((await c.get('/backends/failover')).body.backends).toEqual([]);
    const utf8 = await c.request('POST', '/backends/failover', Buffer.from('{"backends":[],"description":"café ✓"}', 'utf8'));
    expect(utf8.status).toBe(201);
    expect(utf8.body.description).toBe('café ✓');
  });

  it('accepts Content-Type on GET and DELETE without a body', async () => {
    const { body } = await c.post('/backends/failover', { backends: [] });
    const get = await c.request('GET', `/backends/failover/${body.id}`, undefined, { 'content-type': 'application/json' });
    expect(get.status).toBe(200);
    const del = await c.request('DELETE', `/backends/failover/${body.id}`, undefined, { 'content-type': 'application/json' });
    expect(del.status).toBe(204);
  });

  it('puts an Operation-Id on every response', async () => {
    const ok = await c.get('/backends/failover');
    expect(ok.headers.get('operation-id')).toMatch(/^op_/);
    const err = await c.get('/backends/failover/bkdfo_' + 'x'.repeat(27));
    expect(err.headers.get('operation-id')).toBe(err.body.details.operation_id);
    expect(err.headers.get('operation-id')).not.toBe(ok.headers.get('operation-id'));
  });

  it('answers requests Node refuses before routing (headers or query over 16 KiB, not HTTP) in the API error shape with an operation id', async () => {
    const auth = `Authorization: Bearer ${c.apiKey}\r\nService-Version: 2\r\n`;
    for (const [request, status, code] of [
      [`GET /backends/failover HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'ERR_HEADERS_TOO_LARGE'],
      [`GET /backends/failover?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 431, 'ERR_HEADERS_TOO_LARGE'],
      ['NOT HTTP AT ALL\r\n\r\n', 400, 'ERR_BAD_REQUEST'],
    ] as const) {
      const r = await raw(svc.url, request);
      expect(r.status).toBe(status);
      expect(r.body).toEqual({ error_code: code, status_code: status, msg: expect.any(String), details: { operation_id: r.headers['operation-id'] } });
      expect(r.headers['operation-id']).toMatch(/^op_[0-9A-Za-z]{27}$/);
    }
  });

  it('builds uris from the Host header when it is a host[:port], refuses one that is not, and uses its own address when HTTP/1.0 sends none', async () => {
    const auth = `Authorization: Bearer ${c.apiKey}\r\nService-Version: 2\r\nConnection: close\r\n`;
    for (const host of ['api.example.com', 'edge_api:8080', '[::1]:8443', 'API.Example.COM.']) {
      const r = await raw(svc.url, `GET /backends/failover?limit=1 HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`);
      expect(r.status).toBe(200);
      expect(r.body.uri).toBe(`http://${host}/backends/failover`);
    }
    for (const host of ['a b', 'evil.com/x?y=', 'x@evil.com', 'x:port', 'a.com:99999']) {
      const r = await raw(svc.url, `GET /backends/failover?limit=1 HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`);
      expect(r.status).toBe(400);
      expect(r.body.error_code).toBe('ERR_BAD_REQUEST');
      expect(r.body.msg).toContain('Host header');
    }
    expect((await raw(svc.url, `GET /backends/failover?limit=1 HTTP/1.1\r\nHost: a.com:65535\r\n${auth}\r\n`)).status).toBe(200);
    // Two Host headers: Node keeps the first; the request is refused instead (RFC 9112).
    const two = await raw(svc.url, `GET /backends/failover?limit=1 HTTP/1.1\r\nHost: a.example\r\nhost: b.example\r\n${auth}\r\n`);
    expect([two.status, two.body.msg]).toEqual([400, 'the request has more than one Host header']);
    const old = await raw(svc.url, `GET /backends/failover?limit=1 HTTP/1.0\r\n${auth}\r\n`);
    expect(old.status).toBe(200);
    expect(old.body.uri).toBe(`${svc.url}/backends/failover`);
  });

  it('builds uris from the configured public URL, an ASCII one as written (uris clients and identity providers hold do not change)', async () => {
    for (const [publicUrl, base] of [['https://api.example.com/', 'https://api.example.com'], ['https://API.Example.com:443/Edge/', 'https://API.Example.com:443/Edge']]) {
      const pub = await startTestService(engine, { publicUrl }, svc);
      try {
        const k = await pub.account();
        const made = await k.post('/backends/failover', { backends: [] });
        expect(made.body.uri).toBe(`${base}/backends/failover/${made.body.id}`);
        expect(made.headers.get('location')).toBe(made.body.uri);
        expect((await k.get('/backends/failover?limit=1')).body.uri).toBe(`${base}/backends/failover`);
      } finally {
        await pub.close();
      }
    }
  });

  it('a public URL with an international host or path is used in its ASCII form, in bodies and in headers (Location, Link)', async () => {
    const pub = await startTestService(engine, { publicUrl: 'https://api.例え.jp/édge' }, svc);
    try {
      const k = await pub.account();
      const base = 'https://api.xn--r8jz45g.jp/%C3%A9dge/backends/failover';
      const made = await k.post('/backends/failover', { backends: [] });
      expect(made.status).toBe(201);
      expect(made.headers.get('location')).toBe(`${base}/${made.body.id}`);
      await k.post('/backends/failover', { backends: [] });
      const page = await k.get('/backends/failover?limit=1');
      expect(page.status).toBe(200);
      expect(page.body.uri).toBe(base);
      expect(page.headers.get('link')).toBe(`<${page.body.next_page_uri}>; rel="next"`);
      expect(page.body.next_page_uri).toMatch(new RegExp(`^${base.replace(/[.?]/g, '\\$&')}\\?before_id=`));
    } finally {
      await pub.close();
    }
  });
});

describe('logging', () => {
  it("a database error's text about the failing row (the object's body, secrets and all) is not logged", async () => {
    const lines: string[] = [];
    const stream = new Writable({ write(chunk, _enc, cb) { lines.push(...String(chunk).split('\n').filter(Boolean)); cb(); } });
    const failing = Object.assign(new Error('new row violates check constraint'), { code: '23514', detail: 'Failing row contains (SECRET-IN-ROW)', where: 'SQL statement near SECRET-IN-WHERE' });
    const db = { engine: 'postgres', describe: 'fake', query: async () => { throw failing; }, tx: async () => { throw failing; }, close: async () => {} } as unknown as Db;
    const app = await buildApp({ db, logLevel: 'error', logStream: stream as never, startedSecrets: { fingerprintKey: Buffer.alloc(32) } });
    try {
      const res = await app.inject({ method: 'GET', url: '/backends/failover', headers: { authorization: 'Bearer ep_x', 'service-version': '2' } });
      expect(res.statusCode).toBe(500);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join('\n')).toContain('new row violates check constraint');
      expect(lines.join('\n')).not.toMatch(/SECRET-IN-(ROW|WHERE)/);
    } finally {
      await app.close();
    }
  });

  it('logs each request with its operation id and never the API key', async () => {
    const lines: string[] = [];
    const stream = new Writable({ write(chunk, _enc, cb) { lines.push(...String(chunk).split('\n').filter(Boolean)); cb(); } });
    const svc = await startTestService('pglite', { logLevel: 'info', logStream: stream as never });
    try {
      const c = await svc.account();
      const res = await c.post('/backends/failover', { backends: [] });
      const opId = res.headers.get('operation-id')!;
      const mine = lines.map((l) => JSON.parse(l)).filter((l) => l.operation_id === opId);
      expect(mine.length).toBeGreaterThanOrEqual(2); // incoming request + completed
      expect(lines.join('\n')).not.toContain(c.apiKey!);
    } finally {
      await svc.close();
    }
  });
});
