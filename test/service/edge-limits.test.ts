import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ROUTE_BYTES_PER_EDGE, MAX_ROUTES_PER_EDGE } from '../../src/kinds/https-edge-route.js';
import { LIST_PAGE_BYTES } from '../../src/contract/limits.js';
import { newId } from '../../src/util/ids.js';
import { newEdge, newRoute } from '../helpers/edges.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

describe.each(ENGINES)('limits on an edge and its responses (%s)', (engine) => {
  let svc: TestService;
  beforeAll(async () => { svc = await startTestService(engine); }, 60_000);
  afterAll(async () => { await svc?.close(); });

  /**
   * Routes written straight into the database (as many requests would make them), each with
   * `metadataBytes` of metadata: the limits are about what is stored, however it got there.
   */
  async function storeRoutes(c: TestClient, edgeId: string, n: number, metadataBytes = 0): Promise<void> {
    const ids = Array.from({ length: n }, () => newId('edghtsrt'));
    await svc.db.query(
      `INSERT INTO objects (id, account_id, kind, parent_id, body)
       SELECT id, $1, 'httpsEdgeRoute', $2,
              jsonb_build_object('match_type', 'path_prefix', 'match', '/bulk/' || ord, 'metadata', repeat('m', $4::int))
         FROM unnest($3::text[]) WITH ORDINALITY AS t(id, ord)`,
      [c.accountId, edgeId, ids, metadataBytes],
    );
  }

  it(`refuses route ${MAX_ROUTES_PER_EDGE + 1} of an edge with 400 ERR_LIMIT_EXCEEDED naming the limit, one at a time`, async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    await storeRoutes(c, edge.id, MAX_ROUTES_PER_EDGE - 1);
    // Several at once for the last place: exactly one gets it.
    const tries = await Promise.all(Array.from({ length: 4 }, (_, i) => c.post(`/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: `/last/${i}` })));
    expect(tries.map((r) => r.status).sort()).toEqual([201, 400, 400, 400]);
    const refused = tries.find((r) => r.status === 400)!;
    expect(refused.body).toMatchObject({ error_code: 'ERR_LIMIT_EXCEEDED', status_code: 400, details: { limit: String(MAX_ROUTES_PER_EDGE) } });
    expect(refused.body.msg).toContain(`at most ${MAX_ROUTES_PER_EDGE} HTTPS edge routes`);
    const got = await c.get(`/edges/https/${edge.id}`);
    expect(got.body.routes).toHaveLength(MAX_ROUTES_PER_EDGE);

    // A place freed is a place to take; another edge has places of its own.
    expect((await c.delete(got.body.routes[0].uri.slice(svc.url.length))).status).toBe(204);
    await newRoute(c, edge.id);
    await newRoute(c, (await newEdge(c)).id);
  }, 60_000);

  it('refuses a route write that takes the routes of an edge past their byte limit', async () => {
    const c = await svc.account();
    const edge = await newEdge(c);
    const perRoute = 1024 * 1024;
    await storeRoutes(c, edge.id, Math.floor(MAX_ROUTE_BYTES_PER_EDGE / perRoute) - 1, perRoute);
    // One more route fills the edge to 2,000 bytes under the limit.
    const { rows } = await svc.db.query<{ bytes: string }>('SELECT sum(octet_length(body::text)) AS bytes FROM objects WHERE parent_id = $1', [edge.id]);
    const filler = JSON.stringify({ match: '/bulk/0', metadata: '', match_type: 'path_prefix' }).length + 1;
    await storeRoutes(c, edge.id, 1, MAX_ROUTE_BYTES_PER_EDGE - Number(rows[0].bytes) - filler - 2000);
    const small = await newRoute(c, edge.id, { metadata: 'fits' });
    const big = 'x'.repeat(4000);
    const res = await c.post(`/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/big', metadata: big });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('ERR_LIMIT_EXCEEDED');
    expect(res.body.msg).toContain(`at most ${MAX_ROUTE_BYTES_PER_EDGE / 1024 / 1024} MiB of configuration`);
    expect(res.body.details.limit_bytes).toBe(String(MAX_ROUTE_BYTES_PER_EDGE));
    const patched = await c.patch(`/edges/https/${edge.id}/routes/${small.id}`, { metadata: big });
    expect(patched.status).toBe(400);
    expect(patched.body.error_code).toBe('ERR_LIMIT_EXCEEDED');
    expect((await c.get(`/edges/https/${edge.id}/routes/${small.id}`)).body.metadata).toBe('fits');
  }, 60_000);

  it('ends a list page of edges early, before its routes pass the page budget, and pages on to every edge once', async () => {
    const c = await svc.account();
    // Four edges of 6 MiB of routes each: 24 MiB in all, over the budget.
    const perEdge = 6;
    const edges = [];
    for (let i = 0; i < 4; i++) {
      const e = await newEdge(c);
      await storeRoutes(c, e.id, perEdge, 1024 * 1024);
      edges.push(e.id);
    }
    const empty = await newEdge(c); // newest: first on the first page, no routes
    const seen: string[] = [];
    let path: string | null = '/edges/https';
    let pages = 0;
    while (path) {
      const res = await c.get(path);
      expect(res.status).toBe(200);
      expect(Buffer.byteLength(res.text)).toBeLessThanOrEqual(LIST_PAGE_BYTES + 64 * 1024);
      for (const e of res.body.https_edges) {
        seen.push(e.id);
        expect(e.routes).toHaveLength(e.id === empty.id ? 0 : perEdge); // an edge comes with all its routes or not at all
      }
      path = res.body.next_page_uri ? res.body.next_page_uri.slice(svc.url.length) : null;
      pages++;
    }
    expect(pages).toBeGreaterThanOrEqual(2);
    expect(seen).toEqual([empty.id, ...edges.reverse()]);
  }, 120_000);
});
