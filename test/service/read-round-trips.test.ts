import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/service/app.js';
import { createAccount } from '../../src/service/auth.js';
import type { Db, Queryable } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { ENGINES, openTestDb, TestClient } from '../helpers/service.js';

/**
 * The database as the service sees it, counting the statements it is sent for the reads
 * themselves: the API key's look-up is left out (cached for 5 s, a loaded machine sees it again).
 */
function counting(db: Db): Db & { statements: number } {
  const count = (sql: string) => {
    if (!/\bapi_keys\b/.test(sql)) wrapped.statements++;
  };
  const wrapped = {
    statements: 0,
    engine: db.engine,
    describe: db.describe,
    query: (sql: string, params?: unknown[]) => {
      count(sql);
      return db.query(sql, params);
    },
    tx: <T>(fn: (q: Queryable) => Promise<T>) => db.tx((q) => fn({
      query: (sql: string, params?: unknown[]) => {
        count(sql);
        return q.query(sql, params);
      },
    } as Queryable)),
    close: () => db.close(),
  };
  return wrapped as Db & { statements: number };
}

/**
 * A read is one round trip to the database: a GET of an edge brings its routes in the same query,
 * and a list page of edges brings the routes of all its edges, however many it holds.
 */
describe.each(ENGINES)('reads in one round trip (%s)', (engine) => {
  let db: ReturnType<typeof counting>;
  let drop: () => Promise<void>;
  let app: FastifyInstance;
  let client: TestClient;

  beforeAll(async () => {
    const opened = await openTestDb(engine);
    drop = opened.drop;
    await migrate(opened.db);
    db = counting(opened.db);
    app = await buildApp({ db });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { api_key, account_id } = await createAccount(db, { name: 'round trips' });
    client = new TestClient(`http://127.0.0.1:${(app.server.address() as { port: number }).port}`, api_key, account_id);
  });

  afterAll(async () => {
    await app?.close();
    await drop?.();
  });

  const statementsOf = async (path: string) => {
    const before = db.statements;
    const res = await client.get(path);
    expect(res.status, res.text).toBe(200);
    return { statements: db.statements - before, body: res.body };
  };

  it('GET of an edge with 5 routes, and a list page of 1 or of 12 such edges, each take one statement', async () => {
    const edges: string[] = [];
    for (let e = 0; e < 12; e++) {
      const edge = await client.post('/edges/https', { description: `edge ${e}` });
      expect(edge.status).toBe(201);
      edges.push(edge.body.id);
      for (let r = 0; r < 5; r++) {
        const route = await client.post(`/edges/https/${edge.body.id}/routes`, { match_type: 'path_prefix', match: `/r${r}` });
        expect(route.status, route.text).toBe(201);
      }
    }

    const one = await statementsOf(`/edges/https/${edges[4]}`);
    expect(one.body.routes.map((r: { match: string }) => r.match)).toEqual(['/r0', '/r1', '/r2', '/r3', '/r4']);
    expect(one.statements).toBe(1);

    const small = await statementsOf('/edges/https?limit=1');
    expect(small.body.https_edges).toHaveLength(1);
    const large = await statementsOf('/edges/https?limit=12');
    expect(large.body.https_edges.map((e: { id: string }) => e.id)).toEqual([...edges].reverse());
    for (const edge of large.body.https_edges) expect(edge.routes).toHaveLength(5);
    expect([small.statements, large.statements]).toEqual([1, 1]);
  });
});
