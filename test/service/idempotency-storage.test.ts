import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/util/ids.js';
import { claimAndRead, keepResponse, KeyKeptMeanwhile } from '../../src/store/idempotency.js';
import { newEdge, newRoute } from '../helpers/edges.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

/**
 * What an `Idempotency-Key` keeps (issue 42): bounded bytes per response and per account, and
 * replays that still answer (docs/api.md, Idempotency-Key). On both engines, over HTTP.
 */
describe.each(ENGINES)('bounded Idempotency-Key storage (%s)', (engine) => {
  let svc: TestService;
  beforeAll(async () => { svc = await startTestService(engine, { idempotency: { maxKeysPerAccount: 10_000, maxBytesPerAccount: 64 * 1024, trimEvery: 1 } }); }, 60_000);
  afterAll(async () => { await svc?.close(); });

  /** Routes written straight into the database, each with about 3,200 bytes of hex metadata (compresses poorly). */
  async function storeRoutes(c: TestClient, edgeId: string, n: number): Promise<void> {
    const ids = Array.from({ length: n }, () => newId('edghtsrt'));
    await svc.db.query(
      `INSERT INTO objects (id, account_id, kind, parent_id, body)
       SELECT id, $1, 'httpsEdgeRoute', $2, jsonb_build_object('match_type', 'path_prefix', 'match', '/bulk/' || ord,
              'metadata', (SELECT string_agg(md5(id || g), '') FROM generate_series(1, 100) g))
         FROM unnest($3::text[]) WITH ORDINALITY AS t(id, ord)`,
      [c.accountId, edgeId, ids],
    );
  }
  const keptBytes = async () => Number((await svc.db.query<{ n: string }>("SELECT pg_total_relation_size('idempotency_keys') AS n")).rows[0].n);
  const patch = (c: TestClient, path: string, description: string, key: string) => c.request('PATCH', path, { description }, { 'idempotency-key': key });

  it('10 keyed PATCHes of a 1,000-route edge grow the database by < 1 MB; each replays with the edge, its ETag and Location kept', async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    await storeRoutes(c, edge.id, 1000);
    const path = `/edges/https/${edge.id}`;
    // Settled before measuring: the edge read once (its views), the table's first pages allocated.
    expect((await c.get(path)).body.routes).toHaveLength(1000);
    await patch(c, path, 'warm-up', 'warm-up');
    const before = await keptBytes();
    const answers = [];
    for (let i = 0; i < 10; i++) {
      const r = await patch(c, path, `twenty bytes ${String(i).padStart(6, '0')}`, `k-${i}`);
      expect(r.status, r.text).toBe(200);
      expect(r.text.length).toBeGreaterThan(3_000_000);
      answers.push(r);
    }
    const grown = (await keptBytes()) - before;
    expect(grown).toBeLessThan(1_000_000);

    // The last PATCH again: nothing written since, so the same answer (body and ETag), replayed.
    const last = await patch(c, path, `twenty bytes ${String(9).padStart(6, '0')}`, 'k-9');
    expect(last.status).toBe(200);
    expect(last.headers.get('idempotent-replayed')).toBe('true');
    expect(last.headers.get('etag')).toBe(answers[9].headers.get('etag'));
    expect(last.headers.get('idempotent-original-etag')).toBeNull();
    expect(last.body).toEqual(answers[9].body);
    const version = (await c.get(path)).headers.get('etag');
    expect(version).toBe(answers[9].headers.get('etag'));

    // The first PATCH again: the edge changed since. Nothing is written; the answer is the edge now,
    // its current ETag, and the version the first request produced.
    const first = await patch(c, path, `twenty bytes ${String(0).padStart(6, '0')}`, 'k-0');
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('etag')).toBe(version);
    expect(first.headers.get('idempotent-original-etag')).toBe(answers[0].headers.get('etag'));
    expect(first.body.description).toBe(`twenty bytes ${String(9).padStart(6, '0')}`);
    expect((await c.get(path)).headers.get('etag')).toBe(version);

    // The same key with another body is still refused.
    expect((await patch(c, path, 'another', 'k-1')).body.error_code).toBe('ERR_IDEMPOTENCY_KEY_REUSED');

    // Deleted since: the replay says so, and writes nothing.
    expect((await c.delete(path)).status).toBe(204);
    const gone = await patch(c, path, `twenty bytes ${String(5).padStart(6, '0')}`, 'k-5');
    expect(gone.status).toBe(404);
    expect(gone.body.error_code).toBe('ERR_NOT_FOUND');
    expect(gone.body.msg).toContain(edge.id);
    expect(gone.body.msg).toContain('deleted since');
  }, 120_000);

  it('a small response is kept as sent: its replay is the first answer even after the object changed', async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    const route = await newRoute(c, edge.id);
    const path = `/edges/https/${edge.id}/routes/${route.id}`;
    const first = await patch(c, path, 'one', 'small-1');
    expect(first.status).toBe(200);
    expect((await c.patch(path, { description: 'two' })).status).toBe(200);
    const again = await patch(c, path, 'one', 'small-1');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(again.headers.get('idempotent-original-etag')).toBeNull();
    const kept = await svc.db.query<{ object_id: string | null; has_body: boolean }>('SELECT object_id, body IS NOT NULL AS has_body FROM idempotency_keys WHERE account_id = $1 AND key = $2', [c.accountId, 'small-1']);
    expect(kept.rows).toEqual([{ object_id: null, has_body: true }]);
  });

  it('a keyed create\'s replay is its first response byte for byte (kept in the insert\'s statement), and a GET answers the same object', async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    // A header map's keys out of the order jsonb keeps them in: the response and its replay must still agree.
    const body = { match_type: 'exact_path', match: '/bytes', description: 'bytes', request_headers: { add: { 'x-zebra-long-name': 'z', 'x-a': 'a', 'x-mid': 'm' } } };
    const path = `/edges/https/${edge.id}/routes`;
    const first = await c.request('POST', path, body, { 'idempotency-key': 'bytes-1' });
    expect(first.status, first.text).toBe(201);
    const again = await c.request('POST', path, body, { 'idempotency-key': 'bytes-1' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    for (const h of ['etag', 'location', 'content-type']) expect(again.headers.get(h), h).toBe(first.headers.get(h));
    expect(first.headers.get('location')).toBe(first.body.uri);
    const read = await c.get(`${path}/${first.body.id}`);
    expect(read.body).toEqual(first.body);
    expect(read.headers.get('etag')).toBe(first.headers.get('etag'));
    expect((await c.get(`/edges/https/${edge.id}`)).body.routes).toHaveLength(1);
  });

  it('a key with quotes and backslashes is claimed, kept and replayed as any other', async () => {
    const c = await svc.account();
    const key = `it's a \\ "key"; SELECT 1 --`;
    const body = { backends: [newId('bkdhr')], description: 'quoted' };
    const first = await c.request('POST', '/backends/failover', body, { 'idempotency-key': key });
    expect(first.status, first.text).toBe(201);
    const again = await c.request('POST', '/backends/failover', body, { 'idempotency-key': key });
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    const other = await c.request('POST', '/backends/failover', { ...body, description: 'another' }, { 'idempotency-key': key });
    expect(other.body.error_code).toBe('ERR_IDEMPOTENCY_KEY_REUSED');
    const { rows } = await svc.db.query<{ key: string }>('SELECT key FROM idempotency_keys WHERE account_id = $1', [c.accountId]);
    expect(rows).toEqual([{ key }]);
    expect((await c.get('/backends/failover')).body.backends).toHaveLength(1);
  });

  it('a create whose response passes the size kept whole is kept by reference: its replay is the object, its ETag and Location', async () => {
    const small = await startTestService(engine, { idempotency: { maxKeptResponseBytes: 100 } });
    try {
      const c = await small.account();
      const body = { backends: [newId('bkdhr')], description: 'kept by reference' };
      const post = () => c.request('POST', '/backends/failover', body, { 'idempotency-key': 'create-1' });
      const made = await post();
      expect(made.status, made.text).toBe(201);
      const again = await post();
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('location')).toBe(made.headers.get('location'));
      expect(again.headers.get('etag')).toBe(made.headers.get('etag'));
      expect(again.body).toEqual(made.body);
      expect((await c.get('/backends/failover')).body.backends).toHaveLength(1);
      const kept = await small.db.query<{ object_id: string | null; body: unknown }>('SELECT object_id, body FROM idempotency_keys WHERE account_id = $1', [c.accountId]);
      expect(kept.rows).toEqual([{ object_id: made.body.id, body: null }]);
      // Deleted since: a 404 that says so, and nothing is created again.
      expect((await c.delete(`/backends/failover/${made.body.id}`)).status).toBe(204);
      const gone = await post();
      expect(gone.status).toBe(404);
      expect(gone.body.msg).toContain('deleted since');
      expect((await c.get('/backends/failover')).body.backends).toHaveLength(0);
    } finally {
      await small.close();
    }
  });

  it('an account keeps at most its bytes: beyond them the oldest keys go first, and other accounts keep theirs', async () => {
    const a = await svc.account();
    const b = await svc.account();
    const edgeA = await newEdge(a);
    const edgeB = await newEdge(b);
    // About 5 KB of response each: 64 KiB holds a dozen.
    const big = (i: number) => `${i} `.padEnd(4000, 'z');
    const put = (c: TestClient, edgeId: string, i: number) => c.request('PATCH', `/edges/https/${edgeId}`, { metadata: big(i) }, { 'idempotency-key': `bytes-${String(i).padStart(2, '0')}` });
    expect((await put(b, edgeB.id, 0)).status).toBe(200);
    for (let i = 0; i < 30; i++) expect((await put(a, edgeA.id, i)).status).toBe(200);
    const { rows } = await svc.db.query<{ key: string; bytes: number }>('SELECT key, bytes FROM idempotency_keys WHERE account_id = $1 ORDER BY key', [a.accountId]);
    const total = rows.reduce((n, r) => n + r.bytes, 0);
    expect(total).toBeLessThanOrEqual(64 * 1024);
    expect(rows.length).toBeGreaterThan(5);
    expect(rows.length).toBeLessThan(30);
    expect(rows.at(-1)!.key).toBe('bytes-29');
    // The newest replays; the oldest is a new request.
    expect((await put(a, edgeA.id, 29)).headers.get('idempotent-replayed')).toBe('true');
    expect((await put(a, edgeA.id, 0)).headers.get('idempotent-replayed')).toBeNull();
    expect((await put(b, edgeB.id, 0)).headers.get('idempotent-replayed')).toBe('true');
  });

  it('a replica from before migration 016 (the claim with two arguments) is told a key kept by reference is in progress, not given an empty body', async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    await storeRoutes(c, edge.id, 10);
    expect((await patch(c, `/edges/https/${edge.id}`, 'by reference', 'old-replica')).status).toBe(200);
    await newRoute(c, edge.id);
    expect((await c.request('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/kept' }, { 'idempotency-key': 'old-replica-small' })).status).toBe(201);
    const old = (key: string) => svc.db.tx(async (q) => (await q.query<{ claimed: boolean; status: number | null }>('SELECT claimed, status FROM ep_claim_idempotency_key($1, $2)', [c.accountId, key])).rows);
    expect(await old('old-replica')).toEqual([{ claimed: false, status: 200 }]);
    expect(await old('old-replica-small')).toEqual([{ claimed: true, status: 201 }]);
  });

  it('deleting an account deletes its kept responses (migration 018: a trigger, not a foreign key)', async () => {
    const [gone, kept] = [await svc.account(), await svc.account()];
    for (const c of [gone, kept]) expect((await c.request('POST', '/backends/failover', { backends: [newId('bkdhr')] }, { 'idempotency-key': 'mine' })).status).toBe(201);
    await svc.db.query('DELETE FROM accounts WHERE id = $1', [gone.accountId]);
    const { rows } = await svc.db.query<{ account_id: string }>('SELECT account_id FROM idempotency_keys WHERE account_id = ANY($1)', [[gone.accountId, kept.accountId]]);
    expect(rows).toEqual([{ account_id: kept.accountId }]);
  });

  it('a live kept response is never written over; an expired one is', async () => {
    const c = await svc.account();
    const keep = (hash: string) => svc.db.tx((q) => keepResponse(q, c.accountId, 'kept', { request_hash: hash, status: 201, headers: {} }, '{"n": 1}', 24));
    await keep('first');
    await expect(keep('second')).rejects.toBeInstanceOf(KeyKeptMeanwhile);
    const hashes = async () => (await svc.db.query<{ request_hash: string }>('SELECT request_hash FROM idempotency_keys WHERE account_id = $1', [c.accountId])).rows.map((r) => r.request_hash);
    expect(await hashes()).toEqual(['first']);
    await svc.db.query("UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE account_id = $1", [c.accountId]);
    await keep('third');
    expect(await hashes()).toEqual(['third']);
  });

  // A create claims its key in its insert's statement (PostgreSQL: no claim of its own before it),
  // with the lock a claim first takes: a transaction holding the key (a request in progress, on
  // any replica, a PATCH with the key claimed first) makes the create 409 at once, and nothing of
  // it is written; once the holder is gone, the create runs, and its retry replays it.
  if (engine === 'postgres') it('a create whose key another transaction holds is 409 and writes nothing; once released it is created, and replayed', async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    const create = () => c.request('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/held' }, { 'idempotency-key': 'held' });
    let release!: () => void;
    let held!: () => void;
    const isHeld = new Promise<void>((r) => { held = r; });
    const gate = new Promise<void>((r) => { release = r; });
    // Held as every other keyed write (and a replica claiming first) holds it: the same lock, or the create would not see it.
    const holder = svc.db.tx(async (q) => {
      expect((await claimAndRead(q, c.accountId, 'held')).claimed).toBe(true);
      held();
      await gate;
    });
    await isHeld;
    try {
      const busy = await create();
      expect(busy.status, busy.text).toBe(409);
      expect(busy.body.error_code).toBe('ERR_IDEMPOTENCY_IN_PROGRESS');
      expect((await c.get(`/edges/https/${edge.id}`)).body.routes).toHaveLength(0);
      const { rows } = await svc.db.query('SELECT 1 FROM idempotency_keys WHERE account_id = $1', [c.accountId]);
      expect(rows).toHaveLength(0);
    } finally {
      release();
      await holder;
    }
    const made = await create();
    expect(made.status, made.text).toBe(201);
    const again = await create();
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(made.text);
    expect((await c.get(`/edges/https/${edge.id}`)).body.routes).toHaveLength(1);
  });

  // Duplicates of a child's create sent at once: each waits for the parent's row or is told the key
  // is in progress; one route is made, and every 201 is the first answer byte for byte.
  it('concurrent keyed creates of one route make one route; each answer is it, replayed, or in progress', async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    const post = () => c.request('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/at-once' }, { 'idempotency-key': 'at-once' });
    const answers = await Promise.all(Array.from({ length: 6 }, post));
    const made = answers.filter((r) => r.status === 201);
    for (const r of answers.filter((a) => a.status !== 201)) expect([r.status, r.body.error_code]).toEqual([409, 'ERR_IDEMPOTENCY_IN_PROGRESS']);
    expect(made.length).toBeGreaterThan(0);
    expect(new Set(made.map((r) => r.text)).size).toBe(1);
    expect((await c.get(`/edges/https/${edge.id}`)).body.routes).toHaveLength(1);
  });

  // The claim reads in a snapshot taken before its lock: a response committed by the request that
  // held the key until just then can be missed. Staged here: the request is held after its claim (a
  // route's create locks its edge first, and the test holds the edge's row), a response is kept for
  // its key meanwhile, then the request goes on. Its insert, which keeps its response in the same
  // statement, finds the live one and keeps nothing: the write is undone and run again, and the run
  // sees the key. PostgreSQL only: PGlite has one session, so no transaction overlaps another.
  if (engine === 'postgres') it('a response kept after the claim read none: the write is undone and run again, which finds the key', async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    let locked!: () => void;
    let release!: () => void;
    const isLocked = new Promise<void>((r) => { locked = r; });
    const gate = new Promise<void>((r) => { release = r; });
    let lockerPid = 0;
    const locker = svc.db.tx(async (q) => {
      lockerPid = (await q.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      await q.query('SELECT 1 FROM objects WHERE id = $1 FOR UPDATE', [edge.id]);
      locked();
      await gate;
    });
    await isLocked;
    const pending = c.request('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/meanwhile' }, { 'idempotency-key': 'meanwhile' });
    try {
      for (let i = 0; ; i++) {
        const { rows } = await svc.db.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockerPid]);
        if (Number(rows[0].n) > 0) break;
        if (i > 500) throw new Error('the request never waited for the edge row');
        await new Promise((r) => setTimeout(r, 10));
      }
      // Another request's response (another body: its hash differs), committed while this one is held.
      await svc.db.tx((q) => keepResponse(q, c.accountId, 'meanwhile', { request_hash: 'another request', status: 201, headers: {} }, '{"kept": true}', 24));
    } finally {
      release();
      await locker;
    }
    const res = await pending;
    expect(res.status, res.text).toBe(422);
    expect(res.body.error_code).toBe('ERR_IDEMPOTENCY_KEY_REUSED');
    expect((await c.get(`/edges/https/${edge.id}`)).body.routes).toHaveLength(0);
    const { rows } = await svc.db.query<{ body: unknown }>('SELECT body FROM idempotency_keys WHERE account_id = $1', [c.accountId]);
    expect(rows).toEqual([{ body: { kept: true } }]);
  });
});
