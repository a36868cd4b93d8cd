import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kindByName } from '../../src/kinds/registry.js';
import { renderView, VIEW_FORMAT } from '../../src/service/responses/serialize.js';
import type { ObjectRow } from '../../src/store/objects.js';
import { created } from '../helpers/edges.js';
import { startTestService, type TestClient, type TestService } from '../helpers/service.js';

/**
 * Stored views (the GET of an edge, rendered at each write) are valid for `VIEW_FORMAT`, the
 * package version and the response schemas. A change to the code that shapes responses changes
 * none of those: this test renders a fixed edge and route, with most modules (not SAML's, whose certificate is made per edge), and fails when their
 * bytes change while `VIEW_FORMAT` stays. Set EDGEPLANE_UPDATE_VIEW_FORMAT=1 to record the new
 * bytes once the number is raised.
 */
const FIXTURE = new URL('../fixtures/views/format.json', import.meta.url);

let svc: TestService;
let c: TestClient;
beforeAll(async () => {
  svc = await startTestService('pglite');
  c = await svc.account();
});
afterAll(async () => svc?.close());

describe('the stored views\' format', () => {
  it('changes its number whenever the views of the same bodies change', async () => {
    const fo = await created(c.post('/backends/failover', { description: 'fo', backends: ['bkdhr_' + 'a'.repeat(27)] }));
    const edge = await created(c.post('/edges/https', {
      description: 'view format', metadata: '{"team":"edge"}', hostports: ['view-format.example.test:443'],
      tls_termination: { min_version: '1.2' },
      mutual_tls: { certificate_authority_ids: [] },
    }));
    await created(c.post(`/edges/https/${edge.id}/routes`, {
      match_type: 'path_prefix', match: '/all', description: 'every module',
      backend: { backend_id: fo.id },
      ip_restriction: { ip_policy_ids: ['ipp_' + 'b'.repeat(27)] },
      circuit_breaker: { num_buckets: 10, error_threshold_percentage: 0.5 },
      compression: { enabled: true },
      request_headers: { add: { 'x-b': '2', 'x-a': '1' }, remove: ['x-gone'] },
      response_headers: { add: { 'x-r': 'v' } },
      webhook_verification: { provider: 'github', secret: 'not-in-a-view' },
      websocket_tcp_converter: {},
    }));
    await created(c.post(`/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/bare' }));
    const rows = (await svc.db.query<ObjectRow>('SELECT id, account_id, kind, parent_id, body, version::text AS version FROM objects WHERE kind IN ($1, $2) ORDER BY kind, id', ['httpsEdge', 'httpsEdgeRoute'])).rows;
    // Ids, times and versions are the database's: fixed here, so only the shaping shows.
    const ids = new Map<string, string>();
    const fixed = (text: string) => text.replace(/\b[a-z]+_[0-9A-Za-z]{27}\b/g, (id) => {
      if (!ids.has(id)) ids.set(id, `${id.slice(0, id.indexOf('_'))}_${String(ids.size).padStart(27, '0')}`);
      return ids.get(id)!;
    });
    // In an order of their own (ids are random): the edge, then its routes by match.
    rows.sort((a, b) => (a.kind + String(a.body.match ?? '')).localeCompare(b.kind + String(b.body.match ?? '')));
    const views = rows.map((row) => renderView(kindByName(row.kind), { ...row, created_at: '2026-01-01T00:00:00Z', version: '1' }, 'http://api.example.test')!.view);
    expect(views.join('\n')).not.toContain('not-in-a-view');
    const digest = createHash('sha256').update(fixed(views.join('\n'))).digest('hex');
    if (process.env.EDGEPLANE_UPDATE_VIEW_FORMAT) writeFileSync(FIXTURE, JSON.stringify({ format: VIEW_FORMAT, digest }, null, 2) + '\n');
    const recorded = JSON.parse(readFileSync(FIXTURE, 'utf8')) as { format: number; digest: string };
    if (recorded.format === VIEW_FORMAT) {
      expect(digest, 'the views of the same bodies changed: raise VIEW_FORMAT in src/service/responses/serialize.ts, then record it (EDGEPLANE_UPDATE_VIEW_FORMAT=1)').toBe(recorded.digest);
    } else {
      expect.fail(`VIEW_FORMAT is ${VIEW_FORMAT}, the recorded views are of format ${recorded.format}: record them (EDGEPLANE_UPDATE_VIEW_FORMAT=1)`);
    }
  });
});
