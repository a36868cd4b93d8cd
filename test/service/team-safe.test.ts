import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeId, hostport, newEdge, newFailover, newRoute } from '../helpers/edges.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';
import { idempotencyFromEnv } from '../../src/cli/service-config.js';

/**
 * The service's extensions for team-safe applies (docs/api.md): stack locks, Idempotency-Key on
 * creates and module PUTs, ETag / If-Match on objects. On both engines, over HTTP.
 */
describe.each(ENGINES)('team-safe service extensions (%s)', (engine) => {
  let svc: TestService;
  let c: TestClient;
  beforeAll(async () => {
    svc = await startTestService(engine);
    c = await svc.account();
  });
  afterAll(() => svc?.close());

  /** Makes every live lock of the account look expired, as the clock would after its TTL. */
  const expireLocks = (accountId: string) => svc.db.query("UPDATE stack_locks SET expires_at = now() - interval '1 second' WHERE account_id = $1", [accountId]);

  describe('stack locks', () => {
    it('one live lock per stack: a second take is 409 ERR_STACK_LOCKED naming the holder, its start and expiry', async () => {
      const first = await c.post('/stack_locks', { stack: 'web', holder: 'ann@laptop pid 1', ttl_seconds: 60 });
      expect(first.status, first.text).toBe(201);
      expect(first.body).toEqual({
        id: expect.stringMatching(/^stklk_/), uri: `${svc.url}/stack_locks/${first.body.id}`, stack: 'web', holder: 'ann@laptop pid 1',
        created_at: expect.stringMatching(/Z$/), expires_at: expect.stringMatching(/Z$/),
      });
      expect(first.headers.get('location')).toBe(first.body.uri);
      expect(Date.parse(first.body.expires_at) - Date.parse(first.body.created_at)).toBe(60_000);
      const second = await c.post('/stack_locks', { stack: 'web', holder: 'bob@ci' });
      expect(second.status).toBe(409);
      expect(second.body.error_code).toBe('ERR_STACK_LOCKED');
      expect(second.body.details).toMatchObject({ stack: 'web', holder: 'ann@laptop pid 1', created_at: first.body.created_at, expires_at: first.body.expires_at });
      expect(second.body.msg).toContain('ann@laptop pid 1');
      // Another stack, and the same stack in another account, are free.
      expect((await c.post('/stack_locks', { stack: 'api', holder: 'bob@ci' })).status).toBe(201);
      const other = await svc.account();
      expect((await other.post('/stack_locks', { stack: 'web', holder: 'eve' })).status).toBe(201);
      expect((await other.get(`/stack_locks/${first.body.id}`)).status).toBe(404);
      expect((await other.request('DELETE', `/stack_locks/${first.body.id}`)).status).toBe(404);
      expect((await c.get(`/stack_locks/${first.body.id}`)).body).toEqual(first.body);
      const list = await c.get('/stack_locks');
      expect(list.body.stack_locks.map((l: any) => l.stack).sort()).toEqual(['api', 'web']);
      expect(list.body.next_page_uri).toBeNull();
    });

    it('an expired lock no longer counts: it is not listed and the stack can be taken; its renewal is refused', async () => {
      const a = await svc.account();
      const lock = (await a.post('/stack_locks', { stack: 's', holder: 'one', ttl_seconds: 5 })).body;
      await expireLocks(a.accountId);
      expect((await a.get('/stack_locks')).body.stack_locks).toEqual([]);
      expect((await a.get(`/stack_locks/${lock.id}`)).status).toBe(404);
      const renew = await a.patch(`/stack_locks/${lock.id}`, { ttl_seconds: 60 });
      expect(renew.status).toBe(404);
      expect((await a.request('DELETE', `/stack_locks/${lock.id}`)).status).toBe(404); // gone, as GET and PATCH say
      const next = await a.post('/stack_locks', { stack: 's', holder: 'two' });
      expect(next.status, next.text).toBe(201);
      expect(next.body.holder).toBe('two');
    });

    it('renewal moves the expiry; release frees the stack at once', async () => {
      const a = await svc.account();
      const lock = (await a.post('/stack_locks', { stack: 's', holder: 'one', ttl_seconds: 2 })).body;
      const renewed = await a.patch(`/stack_locks/${lock.id}`, { ttl_seconds: 600 });
      expect(renewed.status, renewed.text).toBe(200);
      expect(Date.parse(renewed.body.expires_at) - Date.parse(lock.expires_at)).toBeGreaterThanOrEqual(598_000);
      // No body renews with the default time to live, as {} does.
      const bare = await a.request('PATCH', `/stack_locks/${lock.id}`);
      expect(bare.status, bare.text).toBe(200);
      expect(Date.parse(bare.body.expires_at) - Date.parse(bare.body.created_at)).toBeGreaterThan(0);
      expect((await a.request('DELETE', `/stack_locks/${lock.id}`)).status).toBe(204);
      expect((await a.request('DELETE', `/stack_locks/${lock.id}`)).status).toBe(404);
      expect((await a.post('/stack_locks', { stack: 's', holder: 'two' })).status).toBe(201);
    });

    it('bad input is a clear 4xx', async () => {
      expect((await c.post('/stack_locks', { holder: 'x' })).body.error_code).toBe('ERR_VALIDATION');
      expect((await c.post('/stack_locks', { stack: 'x', holder: 'x', ttl_seconds: 0 })).status).toBe(400);
      expect((await c.post('/stack_locks', { stack: 'x', holder: 'x', ttl_seconds: 99999 })).status).toBe(400);
      expect((await c.post('/stack_locks', { stack: 'x', holder: 'x', extra: 1 })).body.error_code).toBe('ERR_UNKNOWN_FIELD');
      expect((await c.get('/stack_locks?limit=0')).body.error_code).toBe('ERR_INVALID_QUERY');
      expect((await c.get('/stack_locks/nope')).status).toBe(404);
      expect((await c.request('PUT', '/stack_locks', {})).status).toBe(405);
    });

    it('holder and stack are printable text: ESC, CR, LF, TAB, C1 and bidi controls are a clear 400', async () => {
      const bad = ['a\u001b[31mred', 'a\rb', 'x\n::warning::owned', 'a\tb', 'a\u0085b', 'a\u202Eevil', 'a\u2066b', 'a\u2028b', 'a\u007fb'];
      for (const text of bad) {
        for (const field of ['holder', 'stack'] as const) {
          const res = await c.post('/stack_locks', { stack: 'printable', holder: 'ok', [field]: text });
          expect(res.status, `${field} ${JSON.stringify(text)}`).toBe(400);
          expect(res.body.error_code).toBe('ERR_VALIDATION');
          expect(res.body.msg).toContain(`${field}: text may hold printable characters only`);
        }
      }
      // Letters of any script, emoji and punctuation are printable.
      const ok = await c.post('/stack_locks', { stack: 'printable-ünï', holder: 'zoë@hôte, pid 1 — 🚀 «CI» ::notice::' });
      expect(ok.status, ok.text).toBe(201);
    });

    it('expired locks are swept as others are taken: they do not pile up, and live ones are kept', async () => {
      const a = await svc.account();
      for (let i = 0; i < 30; i++) expect((await a.post('/stack_locks', { stack: `old-${i}`, holder: 'gone' })).status).toBe(201);
      const live = (await a.post('/stack_locks', { stack: 'live', holder: 'here', ttl_seconds: 600 })).body;
      await svc.db.query("UPDATE stack_locks SET expires_at = now() - interval '1 second' WHERE account_id = $1 AND stack LIKE 'old-%'", [a.accountId]);
      // Another account's take sweeps them (an expired lock counts nowhere).
      const b = await svc.account();
      expect((await b.post('/stack_locks', { stack: 'sweeper', holder: 'b' })).status).toBe(201);
      const { rows } = await svc.db.query<{ n: string }>('SELECT count(*) AS n FROM stack_locks WHERE account_id = $1', [a.accountId]);
      expect(Number(rows[0].n)).toBe(1);
      expect((await a.get(`/stack_locks/${live.id}`)).status).toBe(200);
    });

    it('two takers at once: exactly one gets the lock', async () => {
      const a = await svc.account();
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => a.post('/stack_locks', { stack: 'race', holder: `h${i}` })));
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    });
  });

  describe('Idempotency-Key', () => {
    const post = (cl: TestClient, path: string, body: unknown, key: string) => cl.request('POST', path, body, { 'idempotency-key': key });

    it('the same key and request return the first response and create nothing more', async () => {
      const a = await svc.account();
      const body = { backends: [fakeId('bkdhr')], description: 'once' };
      const first = await post(a, '/backends/failover', body, 'key-1');
      expect(first.status, first.text).toBe(201);
      const again = await post(a, '/backends/failover', body, 'key-1');
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('location')).toBe(first.body.uri);
      expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect((await a.get('/backends/failover')).body.backends).toHaveLength(1);
      // The key is the account's: another account's same key is a request of its own.
      const b = await svc.account();
      const theirs = await post(b, '/backends/failover', body, 'key-1');
      expect(theirs.status).toBe(201);
      expect(theirs.body.id).not.toBe(first.body.id);
    });

    it('the same key with another body or path is 422 ERR_IDEMPOTENCY_KEY_REUSED, and nothing is created', async () => {
      const a = await svc.account();
      expect((await post(a, '/backends/failover', { backends: [fakeId('bkdhr')] }, 'k')).status).toBe(201);
      const reused = await post(a, '/backends/failover', { backends: [fakeId('bkdhr')] }, 'k');
      expect(reused.status).toBe(422);
      expect(reused.body.error_code).toBe('ERR_IDEMPOTENCY_KEY_REUSED');
      const elsewhere = await post(a, '/certificate_authorities', { ca_pem: 'x' }, 'k');
      expect(elsewhere.body.error_code).toBe('ERR_IDEMPOTENCY_KEY_REUSED');
      expect((await a.get('/backends/failover')).body.backends).toHaveLength(1);
    });

    it('an expired key (after 24 h) is a new request; a refused request may be sent again with its key', async () => {
      const a = await svc.account();
      const body = { backends: [fakeId('bkdhr')] };
      const first = await post(a, '/backends/failover', body, 'old');
      await svc.db.query("UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE account_id = $1", [a.accountId]);
      const later = await post(a, '/backends/failover', body, 'old');
      expect(later.status).toBe(201);
      expect(later.body.id).not.toBe(first.body.id);
      const bad = await post(a, '/edges/https', { hostports: ['nope'] }, 'fixed-later');
      expect(bad.status).toBe(400);
      expect((await post(a, '/edges/https', { hostports: [hostport()] }, 'fixed-later')).status).toBe(201);
    });

    it('concurrent requests with one key make one object', async () => {
      const a = await svc.account();
      const body = { backends: [fakeId('bkdhr')] };
      const results = await Promise.all(Array.from({ length: 6 }, () => post(a, '/backends/failover', body, 'together')));
      const ok = results.filter((r) => r.status === 201);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      for (const r of results) {
        if (r.status !== 201) expect(r.body.error_code, r.text).toBe('ERR_IDEMPOTENCY_IN_PROGRESS');
      }
      expect(new Set(ok.map((r) => r.body.id)).size).toBe(1);
      expect((await a.get('/backends/failover')).body.backends).toHaveLength(1);
    });

    it('a PATCH replays too: the first answer again, the object written once', async () => {
      const a = await svc.account();
      const edge = await newEdge(a, { description: 'v0' });
      const patch = (key: string, description: string) => a.request('PATCH', `/edges/https/${edge.id}`, { description }, { 'idempotency-key': key });
      const first = await patch('p1', 'v1');
      expect(first.status, first.text).toBe(200);
      // Someone else writes meanwhile; the client's retry of its lost answer must not undo that.
      expect((await a.patch(`/edges/https/${edge.id}`, { description: 'v2' })).status).toBe(200);
      const again = await patch('p1', 'v1');
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
      expect(again.body.description).toBe('v1');
      expect((await a.get(`/edges/https/${edge.id}`)).body.description).toBe('v2');
      const other = await patch('p1', 'v3');
      expect(other.status).toBe(422);
      expect(other.body.error_code).toBe('ERR_IDEMPOTENCY_KEY_REUSED');
    });

    it('module PUT and stack lock POST replay too; a key over 255 characters is refused', async () => {
      const a = await svc.account();
      const edge = await newEdge(a);
      const route = await newRoute(a, edge.id);
      const path = `/edges/https/${edge.id}/routes/${route.id}/compression`;
      const put = (key: string) => a.request('PUT', path, { enabled: false }, { 'idempotency-key': key });
      const first = await put('m1');
      expect(first.status, first.text).toBe(200);
      const etag = first.headers.get('etag');
      const again = await put('m1');
      expect(again.headers.get('etag')).toBe(etag);
      expect((await a.get(`/edges/https/${edge.id}/routes/${route.id}`)).headers.get('etag')).toBe(etag);
      const lock = await post(a, '/stack_locks', { stack: 's', holder: 'me' }, 'lock-1');
      const lockAgain = await post(a, '/stack_locks', { stack: 's', holder: 'me' }, 'lock-1');
      expect(lockAgain.status).toBe(201);
      expect(lockAgain.body.id).toBe(lock.body.id);
      const long = await post(a, '/backends/failover', { backends: [fakeId('bkdhr')] }, 'x'.repeat(256));
      expect(long.status).toBe(400);
      expect(long.body.msg).toContain('Idempotency-Key');
    });
  });

  describe('Idempotency-Key: the cap per account', () => {
    let capped: TestService;
    beforeAll(async () => {
      capped = await startTestService(engine, { idempotency: { maxKeysPerAccount: 3, trimEvery: 1 } });
    });
    afterAll(() => capped?.close());
    const keys = async (accountId: string) => (await capped.db.query<{ key: string }>('SELECT key FROM idempotency_keys WHERE account_id = $1 ORDER BY key', [accountId])).rows.map((r) => r.key);

    it('beyond the cap the oldest keys go first: their requests count as new; the newest are answered as before; other accounts keep theirs', async () => {
      const a = await capped.account();
      const b = await capped.account();
      const backend = fakeId('bkdhr');
      const create = (cl: TestClient, key: string) => cl.request('POST', '/backends/failover', { backends: [backend], description: key }, { 'idempotency-key': key });
      const made: Record<string, string> = {};
      expect((await create(b, 'b1')).status).toBe(201);
      for (const key of ['k1', 'k2', 'k3', 'k4', 'k5']) {
        const res = await create(a, key);
        expect(res.status, res.text).toBe(201);
        made[key] = res.body.id;
      }
      expect(await keys(a.accountId)).toEqual(['k3', 'k4', 'k5']);
      expect(await keys(b.accountId)).toEqual(['b1']);
      const newest = await create(a, 'k5');
      expect(newest.headers.get('idempotent-replayed'), newest.text).toBe('true');
      expect(newest.body.id).toBe(made.k5);
      // The oldest key is forgotten: its request is a new one (a second object), as after 24 hours.
      const oldest = await create(a, 'k1');
      expect(oldest.status).toBe(201);
      expect(oldest.headers.get('idempotent-replayed')).toBeNull();
      expect(oldest.body.id).not.toBe(made.k1);
      expect(await keys(a.accountId)).toEqual(['k1', 'k4', 'k5']);
    });
  });

  describe('ETag and If-Match', () => {
    it('every object response has an ETag that changes with each write, module writes included', async () => {
      const fo = await c.post('/backends/failover', { backends: [fakeId('bkdhr')] });
      const e0 = fo.headers.get('etag')!;
      expect(e0).toMatch(/^"\d+"$/);
      const path = `/backends/failover/${fo.body.id}`;
      expect((await c.get(path)).headers.get('etag')).toBe(e0);
      const e1 = (await c.patch(path, { description: 'x' })).headers.get('etag')!;
      expect(e1).not.toBe(e0);
      const edge = await newEdge(c);
      const edgePath = `/edges/https/${edge.id}`;
      const before = (await c.get(edgePath)).headers.get('etag')!;
      const put = await c.put(`${edgePath}/tls_termination`, { min_version: '1.2' });
      expect(put.headers.get('etag')).not.toBe(before);
      expect((await c.get(`${edgePath}/tls_termination`)).headers.get('etag')).toBe(put.headers.get('etag'));
      const del = await c.delete(`${edgePath}/tls_termination`);
      expect(del.status).toBe(204);
      expect(del.headers.get('etag')).not.toBe(put.headers.get('etag'));
      // A route is embedded in its edge's response: its writes change the edge's ETag.
      const e2 = (await c.get(edgePath)).headers.get('etag')!;
      const route = await newRoute(c, edge.id);
      const e3 = (await c.get(edgePath)).headers.get('etag')!;
      expect(e3).not.toBe(e2);
      await c.patch(`${edgePath}/routes/${route.id}`, { description: 'r' });
      const e4 = (await c.get(edgePath)).headers.get('etag')!;
      expect(e4).not.toBe(e3);
      await c.delete(`${edgePath}/routes/${route.id}`);
      expect((await c.get(edgePath)).headers.get('etag')).not.toBe(e4);
    });

    it('If-Match naming another version is 412 ERR_PRECONDITION_FAILED and changes nothing; the current one goes through', async () => {
      const fo = await newFailover(c);
      const path = `/backends/failover/${fo.id}`;
      const etag = (await c.get(path)).headers.get('etag')!;
      await c.patch(path, { description: 'someone else' });
      const stale = await c.request('PATCH', path, { description: 'mine' }, { 'if-match': etag });
      expect(stale.status).toBe(412);
      expect(stale.body.error_code).toBe('ERR_PRECONDITION_FAILED');
      const now = await c.get(path);
      expect(now.body.description).toBe('someone else');
      expect((await c.request('DELETE', path, undefined, { 'if-match': etag })).status).toBe(412);
      expect((await c.get(path)).status).toBe(200);
      const ok = await c.request('PATCH', path, { description: 'mine' }, { 'if-match': now.headers.get('etag')! });
      expect(ok.status, ok.text).toBe(200);
      expect((await c.request('PATCH', path, { description: 'any' }, { 'if-match': '*' })).status).toBe(200);
      const edge = await newEdge(c, { tls_termination: { min_version: '1.3' } });
      const edgeEtag = (await c.get(`/edges/https/${edge.id}`)).headers.get('etag')!;
      await newRoute(c, edge.id);
      const mod = await c.request('PUT', `/edges/https/${edge.id}/tls_termination`, { min_version: '1.2' }, { 'if-match': edgeEtag });
      expect(mod.status).toBe(412);
      expect((await c.get(`/edges/https/${edge.id}/tls_termination`)).body).toMatchObject({ min_version: '1.3' });
      const cur = (await c.get(`/edges/https/${edge.id}`)).headers.get('etag')!;
      expect((await c.request('DELETE', `/edges/https/${edge.id}/tls_termination`, undefined, { 'if-match': edgeEtag })).status).toBe(412);
      expect((await c.request('DELETE', `/edges/https/${edge.id}/tls_termination`, undefined, { 'if-match': cur })).status).toBe(204);
      expect((await c.request('DELETE', path, undefined, { 'if-match': (await c.get(path)).headers.get('etag')! })).status).toBe(204);
    });

    it('a list gives each object\'s ETag (children too) when asked with Prefer: etags, and is unchanged otherwise', async () => {
      const a = await svc.account();
      const edge = await newEdge(a);
      const route = await newRoute(a, edge.id);
      const plain = await a.get('/edges/https');
      expect(Object.keys(plain.body).sort()).toEqual(['https_edges', 'next_page_uri', 'uri']);
      const withTags = await a.request('GET', '/edges/https', undefined, { prefer: 'etags' });
      expect(withTags.body.etags).toEqual({
        [edge.id]: (await a.get(`/edges/https/${edge.id}`)).headers.get('etag'),
        [route.id]: (await a.get(`/edges/https/${edge.id}/routes/${route.id}`)).headers.get('etag'),
      });
      expect(withTags.headers.get('preference-applied')).toBe('etags');
    });
  });
});

describe('EDGEPLANE_IDEMPOTENCY_KEYS and EDGEPLANE_IDEMPOTENCY_MIB (serve)', () => {
  it('are the keys and bytes each account keeps: 10,000 and 32 MiB unless set; a bad value is refused by name', () => {
    expect(idempotencyFromEnv({})).toEqual({ maxKeysPerAccount: 10_000, maxBytesPerAccount: 32 * 1024 * 1024 });
    expect(idempotencyFromEnv({ EDGEPLANE_IDEMPOTENCY_KEYS: '500', EDGEPLANE_IDEMPOTENCY_MIB: '4' })).toEqual({ maxKeysPerAccount: 500, maxBytesPerAccount: 4 * 1024 * 1024 });
    for (const bad of ['0', '1.5']) expect(() => idempotencyFromEnv({ EDGEPLANE_IDEMPOTENCY_MIB: bad })).toThrow(/^EDGEPLANE_IDEMPOTENCY_MIB: must be a whole number of MiB per account \(at least 1\)/);
    for (const bad of ['0', '-1', '1.5', 'lots']) expect(() => idempotencyFromEnv({ EDGEPLANE_IDEMPOTENCY_KEYS: bad })).toThrow(/^EDGEPLANE_IDEMPOTENCY_KEYS: must be a whole number of keys per account \(at least 1\)/);
  });
});
