import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startServe } from '../helpers/cli.js';
import { cleanupDirs, editFile, manifestDir, tempDir } from '../helpers/reconcile.js';
import { ownSchema, TestClient } from '../helpers/service.js';
import type { Plan } from '../../src/reconciler/plan/types.js';

afterAll(() => cleanupDirs());

const MANIFEST = `kind: FailoverBackend
name: pool-a
backends: []
---
kind: FailoverBackend
name: pool-b
backends: []
---
kind: HTTPSEdge
name: web
description: web
hostports: ["drift.example.test:443"]
routes:
  - name: api
    match_type: path_prefix
    match: /api
    description: api
    backend:
      backend_id: pool-a
`;

/**
 * Drift named (issue 34), against a `serve` process: a change made through the API outside the
 * manifests is marked as drift in the text, JSON and Markdown plans; a change of the manifests is
 * not, even beside it, and a value the stack applied later (a module alone) is what the next
 * change by hand is measured against.
 */
async function driftScenario(serveArgs: string[], env: Record<string, string>) {
  const created = await runCli(['admin', 'accounts', 'create', '--name', 'drift', '--json', ...serveArgs], { env });
  expect(created.code, created.stderr).toBe(0);
  const { api_key: key, account_id: account } = JSON.parse(created.stdout);
  const served = await startServe(serveArgs, { env });
  try {
    const target = { ...env, EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key };
    const api = new TestClient(served.url, key, account);
    const dir = manifestDir({ 'stack.yaml': MANIFEST });
    const cli = (args: string[]) => runCli([...args.slice(0, 1), dir, '--stack', 'drift', ...args.slice(1)], { env: target });
    const planJson = async () => {
      const r = await cli(['plan', '--json', '--detailed-exitcode']);
      expect(r.code, r.stderr).toBe(2);
      return JSON.parse(r.stdout) as Plan;
    };
    expect((await cli(['apply', '--auto-approve'])).code).toBe(0);

    const edges = (await api.get('/edges/https')).body as { https_edges: { id: string; routes: { id: string }[] }[] };
    const edge = edges.https_edges[0];
    const routePath = `/edges/https/${edge.id}/routes/${edge.routes[0].id}`;
    // Out of band: the route's description, through the API.
    expect((await api.patch(routePath, { description: 'changed by hand' })).status).toBe(200);
    // And in the manifests: the edge's description.
    editFile(join(dir, 'stack.yaml'), 'description: web\n', 'description: web v2\n');

    const plan = await planJson();
    const route = plan.steps.find((s) => s.object.identity === 'HTTPSEdge/web/routes/api')!;
    const edgeStep = plan.steps.find((s) => s.object.identity === 'HTTPSEdge/web')!;
    expect(route).toMatchObject({ action: 'update', drift: true });
    expect(route.changes).toEqual([{ path: 'description', before: 'changed by hand', after: 'api', drift: true }]);
    expect(edgeStep.drift).toBeUndefined();
    expect(edgeStep.changes).toEqual([{ path: 'description', before: 'web', after: 'web v2' }]);

    const text = await cli(['plan', '--detailed-exitcode']);
    expect(text.code, text.stderr).toBe(2);
    expect(text.stdout).toContain('Changed outside edgeplane (drift): 1 object moved away from what this stack last applied; the changes marked (drift) undo that:\n  HTTPSEdge/web/routes/api: description\n');
    expect(text.stdout).toContain('    ~ description: "changed by hand" → "api" (drift)\n');
    expect(text.stdout).toContain('    ~ description: "web" → "web v2"\n');

    const md = await cli(['plan', '--markdown', '--detailed-exitcode']);
    expect(md.code, md.stderr).toBe(2);
    expect(md.stdout).toContain('> **Changed outside edgeplane (drift)**: 1 object moved away from what this stack last applied; the changes marked (drift) undo that: `HTTPSEdge/web/routes/api` (`description`).');
    expect(md.stdout).toContain('| `HTTPSEdge/web/routes/api` | `description` **(drift)** | `"changed by hand"` | `"api"` |');
    expect(md.stdout).toContain('| `HTTPSEdge/web` | `description` | `"web"` | `"web v2"` |');

    // Applied: the drift undone, nothing left.
    expect((await cli(['apply', '--auto-approve'])).code).toBe(0);
    expect((await cli(['plan', '--detailed-exitcode'])).code).toBe(0);

    // A module changed in the manifests alone is recorded as applied too: moved back by hand, it is drift.
    editFile(join(dir, 'stack.yaml'), 'backend_id: pool-a', 'backend_id: pool-b');
    const moved = await planJson();
    expect(moved.steps.map((s) => [s.object.identity, !!s.drift])).toEqual([['HTTPSEdge/web/routes/api', false]]);
    expect((await cli(['apply', '--auto-approve'])).code).toBe(0);
    const pools = ((await api.get('/backends/failover')).body as { backends: { id: string; metadata: string }[] }).backends;
    const poolA = pools.find((p) => p.metadata.includes('FailoverBackend/pool-a'))!;
    expect((await api.put(`${routePath}/backend`, { backend_id: poolA.id })).status).toBe(200);
    const back = await planJson();
    expect(back.steps).toHaveLength(1);
    expect(back.steps[0]).toMatchObject({ drift: true });
    expect(back.steps[0].changes).toEqual([{ path: 'backend.backend_id', before: 'FailoverBackend/pool-a', after: 'FailoverBackend/pool-b', drift: true }]);
  } finally {
    await served.stop();
  }
}

// The two engines' scenarios share nothing (a state directory, a schema of its own): they run at
// the same time. Each runs its `edgeplane` processes one after another, which leaves a core idle.
describe('drift named in every plan form (issue 34)', { timeout: 240_000, concurrent: true }, () => {
  it('on PGlite: a PATCH through the API is drift, a manifest change is not', async () => {
    await driftScenario(['--state', tempDir('ep-drift-')], {});
  });

  it.skipIf(!process.env.DATABASE_URL)('on PostgreSQL: the same', async () => {
    const { url, drop } = await ownSchema('ep_drift_');
    try {
      await driftScenario([], { DATABASE_URL: url.toString() });
    } finally {
      await drop();
    }
  });
});
