import fc from 'fast-check';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ApiClient } from '../../src/client/api-client.js';
import { preparePlan } from '../../src/reconciler/apply/prepare.js';
import { hasErrors } from '../../src/reconciler/manifests/problems.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { IncrementalPlanner } from '../../src/reconciler/watch/incremental.js';
import { ManifestCache } from '../../src/reconciler/watch/manifest-cache.js';
import { applyDir, cleanupDirs, clientFor, manifestDir } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { ROOT } from '../helpers/cli.js';

/**
 * Watch plans a save over the objects it may have changed (and what refers to them); a plan over
 * every object must come out the same. Checked on a small tree of the benchmark's shape —
 * CAs, chained failover backends, edges naming two CAs, routes naming a backend — applied once,
 * then edited in sequences of saves that are planned but not applied (so what one save left
 * unplanned is still there at the next).
 */
const pem = (f: string) => readFileSync(join(ROOT, 'test', 'fixtures', 'certs', f), 'utf8');
const PEMS = [pem('rsa-ca.pem'), pem('rsa-ca-2.pem'), pem('ec-ca.pem')];
const SPARE_PEM = pem('escaped-cn-ca.pem');

interface Tree {
  cas: { name: string; description: string; ca_pem: string }[];
  backends: { name: string; description: string; chain?: string }[];
  edges: { file: number; name: string; description: string; cas: string[]; routes: { name: string; match: string; backend: string; description: string }[] }[];
}

let tag = 0;
function baseTree(): Tree {
  return {
    cas: PEMS.map((p, i) => ({ name: `ca-${i}`, description: `CA ${i}`, ca_pem: p })),
    backends: [0, 1, 2, 3].map((i) => ({ name: `pool-${i}`, description: `pool ${i}`, ...(i % 2 ? { chain: `pool-${i - 1}` } : {}) })),
    edges: [0, 1, 2, 3].map((e) => ({
      file: e % 2, name: `edge-${e}`, description: `edge ${e}`, cas: [`ca-${e % 3}`, `ca-${(e + 1) % 3}`],
      routes: [0, 1].map((r) => ({ name: `r${r}`, match: r ? `/p${r}/` : '/', backend: `pool-${(e + r) % 4}`, description: `route ${r}` })),
    })),
  };
}

const foreign = (i: number) => `bkdhr_${String(i).padStart(27, '0')}`;

function files(t: Tree, hostTag: string): Record<string, string> {
  const out: Record<string, string> = {
    'edgeplane.yaml': 'stack: subset\n',
    'cas.yaml': t.cas.map((c) => stringify({ kind: 'CertificateAuthority', ...c })).join('---\n'),
    'backends.yaml': t.backends.map((b) => stringify({ kind: 'FailoverBackend', name: b.name, description: b.description, backends: b.chain ? [foreign(1), b.chain] : [foreign(2)] })).join('---\n'),
  };
  for (const f of [0, 1]) {
    out[`edges-${f}.yaml`] = t.edges.filter((e) => e.file === f).map((e) => stringify({
      kind: 'HTTPSEdge', name: e.name, description: e.description, hostports: [`${e.name}.${hostTag}.subset.example:443`],
      mutual_tls: { certificate_authority_ids: e.cas },
      routes: e.routes.map((r) => ({ name: r.name, description: r.description, match_type: 'path_prefix', match: r.match, backend: { backend_id: r.backend } })),
    })).join('---\n') || '[]\n';
  }
  return out;
}

type Edit = (t: Tree) => void;
const pick = <T>(xs: T[], i: number): T | undefined => (xs.length ? xs[i % xs.length] : undefined);
const edits = fc.oneof(
  fc.tuple(fc.nat(), fc.string({ maxLength: 6 })).map(([i, s]): Edit => (t) => { const c = pick(t.cas, i); if (c) c.description = `CA ${s}`; }),
  fc.tuple(fc.nat(), fc.string({ maxLength: 6 })).map(([i, s]): Edit => (t) => { const b = pick(t.backends, i); if (b) b.description = `pool ${s}`; }),
  fc.tuple(fc.nat(), fc.string({ maxLength: 6 })).map(([i, s]): Edit => (t) => { const e = pick(t.edges, i); if (e) e.description = `edge ${s}`; }),
  fc.tuple(fc.nat(), fc.nat(), fc.string({ maxLength: 6 })).map(([i, j, s]): Edit => (t) => { const r = pick(pick(t.edges, i)?.routes ?? [], j); if (r) r.description = `route ${s}`; }),
  // A route moved to another backend; an edge to other CAs; a chain cut or made.
  fc.tuple(fc.nat(), fc.nat(), fc.nat()).map(([i, j, k]): Edit => (t) => { const r = pick(pick(t.edges, i)?.routes ?? [], j); const b = pick(t.backends, k); if (r && b) r.backend = b.name; }),
  fc.tuple(fc.nat(), fc.nat()).map(([i, k]): Edit => (t) => { const e = pick(t.edges, i); const c = pick(t.cas, k); if (e && c) e.cas = [c.name]; }),
  fc.tuple(fc.nat(), fc.nat()).map(([i, k]): Edit => (t) => {
    const b = pick(t.backends, i);
    const to = t.backends.findIndex((x) => x.name === pick(t.backends, k)?.name);
    if (b && to >= 0 && to < t.backends.indexOf(b)) b.chain = b.chain ? undefined : t.backends[to].name;
  }),
  // A CA's certificate changed (the CA is replaced, and the edges naming it move to the new one).
  fc.nat().map((i): Edit => (t) => { const c = pick(t.cas, i); if (c && !t.cas.some((x) => x.ca_pem === SPARE_PEM)) c.ca_pem = SPARE_PEM; }),
  // Objects removed (prunes; refused while still referred to) and added.
  fc.tuple(fc.nat(), fc.nat()).map(([i, j]): Edit => (t) => { const e = pick(t.edges, i); if (e && e.routes.length > 1) e.routes.splice(j % e.routes.length, 1); }),
  fc.nat().map((i): Edit => (t) => { const e = pick(t.edges, i); if (e) t.edges.splice(t.edges.indexOf(e), 1); }),
  fc.nat().map((i): Edit => (t) => {
    const e = pick(t.edges, i);
    if (e && !e.routes.some((r) => r.name === 'new')) e.routes.push({ name: 'new', match: '/new/', backend: t.backends[0].name, description: 'new route' });
  }),
  fc.nat().map((i): Edit => (t) => {
    // A backend nothing names any more is removed; one named is left (the manifests would not validate).
    const b = pick(t.backends, i);
    if (b && !t.backends.some((x) => x.chain === b.name) && !t.edges.some((e) => e.routes.some((r) => r.backend === b.name))) t.backends.splice(t.backends.indexOf(b), 1);
  }),
);

/** What a plan says, without what differs between two plans of the same state by construction. */
function said(plan: Plan) {
  return { steps: plan.steps, summary: plan.summary, warnings: plan.warnings, conflicts: plan.conflicts, blocked: plan.blocked, observed: plan.observed };
}

let svc: TestService;
let client: ApiClient;
let hostTag: string;
let baseDir: string;
beforeAll(async () => {
  svc = await startTestService('pglite');
  client = await clientFor(svc);
  hostTag = `h${Date.now().toString(36)}`;
  baseDir = manifestDir(files(baseTree(), hostTag));
  await applyDir(client, baseDir, 'subset');
});
afterAll(async () => { await client?.close(); await svc?.close(); cleanupDirs(); });

describe('watch: a save planned over what it may have changed', () => {
  it('property: the plan equals a full plan of the same manifests and live state, save after save', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.array(edits, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }), async (saves) => {
      const dir = manifestDir(files(baseTree(), hostTag));
      try {
        const input = { root: dir, stack: 'subset', env: {} };
        const cache = new ManifestCache();
        const planner = new IncrementalPlanner(input, client, (r) => cache.loadFiles(r));
        const first = await planner.prepare();
        expect(first.plan!.steps).toEqual([]);
        const tree = baseTree();
        for (const save of saves) {
          for (const edit of save) edit(tree);
          for (const [name, text] of Object.entries(files(tree, hostTag))) writeFileSync(join(dir, name), text);
          const inc = await planner.prepare();
          const full = await preparePlan(input, client);
          expect(hasErrors(inc.problems)).toBe(hasErrors(full.problems));
          if (!full.plan) continue;
          expect(said(inc.plan!)).toEqual(said(full.plan));
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }), { numRuns: 20 });
  }, 120_000);

  it('a one-field save plans the object and what refers to it, not the whole tree', async () => {
    const dir = manifestDir(files(baseTree(), hostTag));
    const input = { root: dir, stack: 'subset', env: {} };
    const cache = new ManifestCache();
    const planner = new IncrementalPlanner(input, client, (r) => cache.loadFiles(r));
    const first = await planner.prepare();
    expect(first.planned).toBe('all');
    const tree = baseTree();
    tree.backends[2].description = 'edited';
    writeFileSync(join(dir, 'backends.yaml'), files(tree, hostTag)['backends.yaml']);
    const next = await planner.prepare();
    expect(next.plan!.steps.map((s) => s.id)).toEqual(['FailoverBackend/pool-2:update']);
    // pool-2, pool-3 (chained to it) and the two routes naming it; nothing else of the 4 + 3 + 4 + 8.
    expect(next.planned).toBe(4);
  });
});
