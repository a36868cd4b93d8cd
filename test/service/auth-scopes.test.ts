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
  const keys = {} as Record<Scope, TestClient>;
  let ops: Awaited<ReturnType<typeof operations>>;

  beforeAll(async () => {
    svc = await startTestService(engine);
    // Authorized for abuse reports: a 403 here can only be the scope's.
    const owner = await svc.account({ abuseReports: true });
    for (const scope of ['read', 'write', 'admin'] as const) {
      keys[scope] = new TestClient(svc.url, (await createKey(svc.db, owner.accountId, scope)).api_key, owner.accountId);
    }
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
});
