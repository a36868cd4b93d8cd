import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, type Scope } from '../../src/service/auth.js';
import type { Db } from '../../src/store/db.js';
import { ENGINES, startTestService, TestClient, type TestService } from '../helpers/service.js';

/** Every operation the service publishes, from its own OpenAPI document (not a hand-made list). */
async function operations(url: string): Promise<{ method: string; path: string; template: string; description: string }[]> {
  const doc = await (await fetch(url + '/openapi.json')).json() as { paths: Record<string, Record<string, { description?: string }>> };
  const ops = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      ops.push({ method: method.toUpperCase(), template, description: op.description ?? '', path: template.replace(/\{[^}]+\}/g, (p) => (p === '{stack}' ? 'web' : 'x_0123456789abcdef')) });
    }
  }
  return ops;
}

/** Rows in every table of the service's schema: a refused request must change none of them. */
async function rowCounts(db: Db): Promise<Record<string, number>> {
  const { rows: tables } = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  const counts: Record<string, number> = {};
  for (const t of tables) counts[t.table_name] = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM "${t.table_name}"`)).rows[0].n);
  return counts;
}

const READS = new Set(['GET', 'HEAD']);
/** Operations that take a body and write nothing: a read key may call them (plans ask for secret fingerprints). */
const READ_POSTS = new Set(['POST /secret_fingerprints']);
const needs = (o: { method: string; template: string }) => (READS.has(o.method) || READ_POSTS.has(`${o.method} ${o.template}`) ? 'read' : 'write');

describe.each(ENGINES)('scoped API keys (%s)', (engine) => {
  let svc: TestService;
  const keys = {} as Record<Scope | 'stacked', TestClient>;
  let writer: TestClient;
  let ops: Awaited<ReturnType<typeof operations>>;

  beforeAll(async () => {
    svc = await startTestService(engine);
    // Authorized for abuse reports: a 403 here can only be the scope's.
    const owner = await svc.account({ abuseReports: true });
    for (const scope of ['read', 'write', 'admin'] as const) {
      keys[scope] = new TestClient(svc.url, (await createKey(svc.db, owner.accountId, scope)).api_key, owner.accountId);
    }
    // A write key limited to stack web.
    keys.stacked = new TestClient(svc.url, (await createKey(svc.db, owner.accountId, 'write', ['web'])).api_key, owner.accountId);
    writer = keys.write;
    ops = await operations(svc.url);
  });
  afterAll(() => svc?.close());

  it('the matrix covers every kind of write the API has', () => {
    const writes = ops.filter((o) => needs(o) === 'write').map((o) => `${o.method} ${o.template}`);
    expect(ops.map((o) => `${o.method} ${o.template}`)).toEqual(expect.arrayContaining([...READ_POSTS]));
    expect(writes.length).toBeGreaterThan(20);
    // The document says what each operation needs (the public operations have no key).
    for (const op of ops.filter((o) => o.description.includes('scope'))) {
      expect(op.description, `${op.method} ${op.template}`).toContain(`scope ${needs(op)} or above`);
    }
    expect(ops.filter((o) => o.description.includes('Needs an API key of scope')).length).toBeGreaterThan(writes.length);
    expect(writes).toEqual(expect.arrayContaining(['POST /stack_locks', 'PATCH /stack_locks/{id}', 'DELETE /stack_locks/{id}', 'POST /sync_runs', 'POST /stacks/{stack}/sync', 'POST /backends/failover']));
  });

  it('a read key is refused every write with 403 ERR_FORBIDDEN_SCOPE, and nothing is written', async () => {
    const before = await rowCounts(svc.db);
    for (const op of ops.filter((o) => needs(o) === 'write')) {
      const res = await keys.read.request(op.method, op.path, {});
      expect(res.status, `${op.method} ${op.template}`).toBe(403);
      expect(res.body).toMatchObject({
        error_code: 'ERR_FORBIDDEN_SCOPE',
        msg: `this API key has scope read; ${op.method} ${op.template} needs write`,
        details: { scope: 'read', needs: 'write' },
      });
    }
    expect(await rowCounts(svc.db)).toEqual(before);
  });

  it('a read key is never refused a read for its scope', async () => {
    for (const op of ops.filter((o) => READS.has(o.method))) {
      for (const method of ['GET', 'HEAD']) {
        const res = await keys.read.request(method, op.path);
        expect(res.status, `${method} ${op.template}`).not.toBe(403);
      }
    }
    for (const op of ops.filter((o) => READ_POSTS.has(`${o.method} ${o.template}`))) {
      const res = await keys.read.request(op.method, op.path, {});
      expect(res.body?.error_code, `${op.method} ${op.template}`).not.toBe('ERR_FORBIDDEN_SCOPE');
    }
  });

  it.each(['write', 'admin'] as const)('a key of scope %s is refused nothing for its scope', async (scope) => {
    for (const op of ops) {
      const res = await keys[scope].request(op.method, op.path, READS.has(op.method) || op.method === 'DELETE' ? undefined : {});
      expect(res.body?.error_code, `${op.method} ${op.template}`).not.toBe('ERR_FORBIDDEN_SCOPE');
      expect(res.status, `${op.method} ${op.template}: ${res.text.slice(0, 200)}`).toBeLessThan(500);
    }
  });

  it('a read key still gets 404 for an unknown path and 405 for a method a path does not take', async () => {
    expect((await keys.read.post('/no_such_things', {})).body.error_code).toBe('ERR_NOT_FOUND');
    expect((await keys.read.request('PUT', '/stack_locks', {})).body.error_code).toBe('ERR_METHOD_NOT_ALLOWED');
  });

  it('a read key reads, and a write key writes what it then reads', async () => {
    const created = await keys.write.post('/backends/failover', { backends: [] });
    expect(created.status).toBe(201);
    expect((await keys.read.get(`/backends/failover/${created.body.id}`)).status).toBe(200);
    expect((await keys.read.delete(`/backends/failover/${created.body.id}`)).body.error_code).toBe('ERR_FORBIDDEN_SCOPE');
    expect((await keys.read.get(`/backends/failover/${created.body.id}`)).status).toBe(200);
  });

  it('a stack-limited key is refused every write of the document that names no object, lock or run of its stacks, and nothing is written', async () => {
    const before = await rowCounts(svc.db);
    let refused = 0;
    for (const op of ops.filter((o) => needs(o) === 'write')) {
      // The operations' {stack} is web, the key's own: here another.
      const res = await keys.stacked.request(op.method, op.path.replace('/stacks/web', '/stacks/other'), op.method === 'DELETE' ? undefined : {});
      expect(res.status, `${op.method} ${op.template}: ${res.text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${op.method} ${op.template}: ${res.text.slice(0, 200)}`).toBeLessThan(500);
      if (res.body?.error_code === 'ERR_FORBIDDEN_SCOPE') refused++;
    }
    // Every create of an object without a marker, every write that is no stack's (abuse reports).
    expect(refused).toBeGreaterThan(3);
    expect((await keys.stacked.post('/abuse_reports', { urls: ['https://example.com/x'] })).body).toMatchObject({
      error_code: 'ERR_FORBIDDEN_SCOPE', msg: 'this API key is limited to stack web; POST /abuse_reports writes nothing of a stack',
    });
    expect(await rowCounts(svc.db)).toEqual(before);
  });

  it('a stack-limited key writes its stacks\' objects, locks and runs, and nothing of another stack', async () => {
    const stacked = keys.stacked;
    const marker = (stack: string, id: string) => JSON.stringify({ managed_by: { id, stack, tool: 'edgeplane', v: 1 } });
    const host = (n: string) => `${n}-${svc.engine}-${Date.now()}.example.com:443`;
    // Its own stack: allowed.
    const mine = await stacked.post('/edges/https', { hostports: [host('mine')], metadata: marker('web', 'HTTPSEdge/web') });
    expect(mine.status, mine.text).toBe(201);
    const myRoute = await stacked.post(`/edges/https/${mine.body.id}/routes`, { match_type: 'path_prefix', match: '/a', metadata: marker('web', 'HTTPSEdge/web/routes/a') });
    expect(myRoute.status, myRoute.text).toBe(201);
    expect((await stacked.patch(`/edges/https/${mine.body.id}`, { description: 'mine' })).status).toBe(200);
    expect((await stacked.put(`/edges/https/${mine.body.id}/routes/${myRoute.body.id}/webhook_verification`, { provider: 'github', secret: 's' })).status).toBe(200);
    const lock = await stacked.post('/stack_locks', { stack: 'web', holder: 'ci' });
    expect(lock.status, lock.text).toBe(201);
    expect((await stacked.delete(`/stack_locks/${lock.body.id}`)).status).toBe(204);
    expect((await stacked.request('POST', '/stacks/web/sync', {})).status).toBe(202);
    expect((await stacked.post('/secret_fingerprints', { stack: 'web', secrets: [{ identity: 'HTTPSEdge/web', path: 'x', value: 'v' }] })).status).toBe(200);

    // Another stack's, or no stack's: refused, and nothing written.
    const theirs = await writer.post('/edges/https', { hostports: [host('theirs')], metadata: marker('other', 'HTTPSEdge/api') });
    const theirRoute = await writer.post(`/edges/https/${theirs.body.id}/routes`, { match_type: 'path_prefix', match: '/b', metadata: marker('other', 'HTTPSEdge/api/routes/b') });
    const theirLock = await writer.post('/stack_locks', { stack: 'other', holder: 'ci' });
    const plain = await writer.post('/backends/failover', { backends: [] });
    const before = await rowCounts(svc.db);
    const refusals: [string, Promise<{ status: number; body: any }>, string][] = [
      ['create without a marker', stacked.post('/backends/failover', { backends: [] }), 'the new failover backend carries no ownership marker of it'],
      ['create in another stack', stacked.post('/backends/failover', { backends: [], metadata: marker('other', 'FailoverBackend/x') }), 'the new failover backend belongs to stack other'],
      ['update', stacked.patch(`/edges/https/${theirs.body.id}`, { description: 'x' }), `belongs to stack other`],
      ['update of an unmarked object', stacked.patch(`/backends/failover/${plain.body.id}`, { backends: [] }), 'carries no ownership marker'],
      ['move out of its stack', stacked.patch(`/edges/https/${mine.body.id}`, { metadata: marker('other', 'HTTPSEdge/web') }), `the new metadata of HTTPS edge ${mine.body.id} belongs to stack other`],
      ['strip the marker', stacked.patch(`/edges/https/${mine.body.id}`, { metadata: '' }), 'carries no ownership marker'],
      ['delete', stacked.delete(`/edges/https/${theirs.body.id}`), 'belongs to stack other'],
      ['module put', stacked.put(`/edges/https/${theirs.body.id}/routes/${theirRoute.body.id}/webhook_verification`, { provider: 'github', secret: 's' }), 'belongs to stack other'],
      ['module delete', stacked.delete(`/edges/https/${theirs.body.id}/routes/${theirRoute.body.id}/webhook_verification`), 'belongs to stack other'],
      ['a route of its stack on their edge', stacked.post(`/edges/https/${theirs.body.id}/routes`, { match_type: 'path_prefix', match: '/c', metadata: marker('web', 'HTTPSEdge/web/routes/c') }), 'belongs to stack other'],
      ['their lock', stacked.post('/stack_locks', { stack: 'other', holder: 'ci' }), 'the lock is stack "other"\'s'],
      ['renew their lock', stacked.patch(`/stack_locks/${theirLock.body.id}`, {}), 'is stack "other"\'s'],
      ['release their lock', stacked.delete(`/stack_locks/${theirLock.body.id}`), 'is stack "other"\'s'],
      ['their sync', stacked.request('POST', '/stacks/other/sync', {}), 'the sync request is stack "other"\'s'],
      ['their run', stacked.post('/sync_runs', { stack: 'other', trigger: 'cli', holder: 'ci', outcome: 'applied', counts: { create: 0, update: 0, replace: 0, delete: 0 } }), 'the run is stack "other"\'s'],
      ['their fingerprints', stacked.post('/secret_fingerprints', { stack: 'other', secrets: [{ identity: 'HTTPSEdge/api', path: 'x', value: 'v' }] }), 'stack "other"\'s'],
    ];
    for (const [what, res$, msg] of refusals) {
      const res = await res$;
      expect(res.status, what).toBe(403);
      expect(res.body.error_code, what).toBe('ERR_FORBIDDEN_SCOPE');
      expect(res.body.msg, what).toContain('this API key is limited to stack web; ');
      expect(res.body.msg, what).toContain(msg);
    }
    expect(await rowCounts(svc.db)).toEqual(before);
    expect((await writer.get(`/edges/https/${mine.body.id}`)).body.metadata).toBe(marker('web', 'HTTPSEdge/web'));
  });
});
