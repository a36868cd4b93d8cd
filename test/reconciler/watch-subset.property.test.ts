import fc from 'fast-check';
import { readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ApiClient } from '../../src/client/api-client.js';
import { kindByName } from '../../src/kinds/registry.js';
import type { Body } from '../../src/kinds/types.js';
import { applyPlan } from '../../src/reconciler/apply/execute.js';
import { secretsFromMap } from '../../src/reconciler/apply/materialize.js';
import { decodeMetadata } from '../../src/reconciler/ownership/marker.js';
import { preparePlan } from '../../src/reconciler/plan/prepare.js';
import { hasErrors } from '../../src/reconciler/manifests/problems.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { watchPlanner } from '../../src/reconciler/watch/session.js';
import { LiveIndex } from '../../src/reconciler/watch/live-index.js';
import { ManifestCache } from '../../src/reconciler/watch/manifest-cache.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import { applyDir, cleanupDirs, clientFor, manifestDir } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { ROOT } from '../helpers/cli.js';

/**
 * Watch plans a save over the objects it may have changed (and what refers to them), from the
 * manifests and the live state it keeps between runs; a plan over every object must come out the
 * same. Checked on a small tree of the benchmark's shape — CAs, chained failover backends, edges
 * naming two CAs, routes naming a backend — applied once, then edited in sequences of saves:
 * fields, references and chains changed, objects added, removed and renamed (`renamed_from`),
 * edges moved between files (files added and removed), a name used twice across files. Some
 * saves' plans are applied (watch then reads again what the apply wrote), others are not (what one
 * save left unplanned is still there at the next). Between saves, objects are made outside the
 * manifests — a copy of one of ours, a route of none on one of our edges — and the run that
 * follows reads everything, as an --interval run does.
 */
const pem = (f: string) => readFileSync(join(ROOT, 'test', 'fixtures', 'certs', f), 'utf8');
const PEMS = [pem('rsa-ca.pem'), pem('rsa-ca-2.pem'), pem('ec-ca.pem')];
const SPARE_PEM = pem('escaped-cn-ca.pem');
const EDGE_FILES = 3;

interface Route { name: string; renamedFrom?: string; match: string; backend: string; description: string }
interface Edge { file: number; name: string; renamedFrom?: string; hostport?: string; description: string; cas: string[]; routes: Route[] }
interface Tree {
  cas: { name: string; description: string; ca_pem: string }[];
  backends: { name: string; renamedFrom?: string; description: string; chain?: string }[];
  edges: Edge[];
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
const renamed = (from: string | undefined) => (from ? { renamed_from: from } : {});

function files(t: Tree, hostTag: string): Record<string, string> {
  const out: Record<string, string> = {
    'edgeplane.yaml': 'stack: subset\n',
    'cas.yaml': t.cas.map((c) => stringify({ kind: 'CertificateAuthority', ...c })).join('---\n'),
    'backends.yaml': t.backends.map((b) => stringify({ kind: 'FailoverBackend', name: b.name, ...renamed(b.renamedFrom), description: b.description, backends: b.chain ? [foreign(1), b.chain] : [foreign(2)] })).join('---\n'),
  };
  // A file for each edge file number some edge has: moving the last edge out of one removes it.
  for (let f = 0; f < EDGE_FILES; f++) {
    const edges = t.edges.filter((e) => e.file === f);
    if (!edges.length) continue;
    out[`edges-${f}.yaml`] = edges.map((e) => stringify({
      kind: 'HTTPSEdge', name: e.name, ...renamed(e.renamedFrom), description: e.description, hostports: [`${e.hostport ?? e.name}.${hostTag}.subset.example:443`],
      mutual_tls: { certificate_authority_ids: e.cas },
      routes: e.routes.map((r) => ({ name: r.name, ...renamed(r.renamedFrom), description: r.description, match_type: 'path_prefix', match: r.match, backend: { backend_id: r.backend } })),
    })).join('---\n');
  }
  return out;
}

function write(dir: string, t: Tree, hostTag: string): void {
  const want = files(t, hostTag);
  for (const [name, text] of Object.entries(want)) writeFileSync(join(dir, name), text);
  for (const name of readdirSync(dir)) if (/^edges-\d+\.yaml$/.test(name) && !(name in want)) unlinkSync(join(dir, name));
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
  // An edge moved to another file (a file made, or left empty and removed).
  fc.tuple(fc.nat(), fc.nat()).map(([i, f]): Edit => (t) => { const e = pick(t.edges, i); if (e) e.file = f % EDGE_FILES; }),
  // Renamed, with `renamed_from` (the live object is kept); a backend's referrers follow it.
  fc.nat().map((i): Edit => (t) => { const e = pick(t.edges, i); if (e && e.name.length < 9) [e.renamedFrom, e.name, e.hostport] = [e.name, `${e.name}x`, e.hostport ?? e.name]; }),
  fc.tuple(fc.nat(), fc.nat()).map(([i, j]): Edit => (t) => { const r = pick(pick(t.edges, i)?.routes ?? [], j); if (r && r.name.length < 5) [r.renamedFrom, r.name] = [r.name, `${r.name}x`]; }),
  fc.nat().map((i): Edit => (t) => {
    const b = pick(t.backends, i);
    if (!b || b.name.length > 8) return;
    const old = b.name;
    [b.renamedFrom, b.name] = [old, `${old}x`];
    for (const x of t.backends) if (x.chain === old) x.chain = b.name;
    for (const e of t.edges) for (const r of e.routes) if (r.backend === old) r.backend = b.name;
  }),
  // An edge's name used again in another file (the manifests do not validate until one goes).
  fc.tuple(fc.nat(), fc.nat()).map(([i, f]): Edit => (t) => {
    const e = pick(t.edges, i);
    if (e) t.edges.push({ ...structuredClone(e), file: f % EDGE_FILES, hostport: `${e.name}-copy`, renamedFrom: undefined });
  }),
);

/** Made outside the manifests before a save's run (which then reads everything): a copy of one of our backends, or a route of no stack on one of our edges. */
type Outside = 'none' | 'copy' | 'route';
async function makeOutside(client: ApiClient, what: Outside, i: number): Promise<void> {
  if (what === 'none') return;
  const owned = (o: Body) => decodeMetadata(o.metadata).marker?.stack === 'subset';
  if (what === 'copy') {
    const b = pick((await client.list(kindByName('failoverBackend'))).filter(owned), i);
    const refs = (b?.backends as (string | { id: string })[] | undefined)?.map((x) => (typeof x === 'string' ? x : x.id));
    if (b) await client.send('POST', '/backends/failover', { backends: refs, description: b.description, metadata: b.metadata });
  } else {
    const e = pick((await client.list(kindByName('httpsEdge'))).filter(owned), i);
    if (e) await client.send('POST', `/edges/https/${e.id as string}/routes`, { match_type: 'path_prefix', match: `/outside-${tag++}/` });
  }
}

/** Routes no stack manages, made by `makeOutside`, deleted: the next run starts from the base tree. */
async function removeOutside(client: ApiClient): Promise<void> {
  for (const e of await client.list(kindByName('httpsEdge'))) {
    for (const r of (e.routes as Body[] | undefined) ?? []) if (!decodeMetadata(r.metadata).marker) await client.send('DELETE', `/edges/https/${e.id as string}/routes/${r.id as string}`);
  }
}

/**
 * The live state a watch session keeps, as its indexes say it: after a run's reads it must be what
 * a full read says (nothing changes outside between a run's reads here).
 */
function liveSaid(live: LiveIndex) {
  const all = live.all();
  const sorted = (xs: Iterable<string>) => [...xs].sort();
  return {
    objects: sorted(all.map((o) => `${o.id} ${o.parentId ?? '-'} ${o.fingerprint} ${o.owner.type} ${o.marker?.id ?? '-'}`)),
    byId: all.every((o) => live.get(o.id) === o),
    copies: sorted(all.filter((o) => o.marker && o.owner.type === 'this').map((o) => `${o.marker!.id}: ${sorted(live.copies(o.marker!.id).map((c) => c.id)).join(' ')}`)),
    ofKind: sorted(all.map((o) => `${o.kind.name}: ${live.ownedOf(o.kind.name).size}`)),
    gone: sorted(live.gone),
    duplicated: sorted(live.duplicated),
    foreign: sorted([...live.foreign].map((o) => o.id)),
    referrers: sorted(all.map((o) => `${o.id} <- ${sorted([...live.referrersOf(o.id)].map((r) => r.id)).join(' ')}`)),
  };
}

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
    const save = fc.record({ edits: fc.array(edits, { minLength: 1, maxLength: 3 }), apply: fc.boolean(), outside: fc.constantFrom<Outside>('none', 'none', 'none', 'copy', 'route'), at: fc.nat() });
    await fc.assert(fc.asyncProperty(fc.array(save, { minLength: 1, maxLength: 5 }), async (saves) => {
      const dir = manifestDir(files(baseTree(), hostTag));
      try {
        await applyDir(client, dir, 'subset'); // the live state as the base tree says (what an earlier run applied is undone)
        const input = { root: dir, stack: 'subset', env: {} };
        const cache = new ManifestCache();
        const planner = watchPlanner(input, client, cache).planner;
        const first = await planner.prepare();
        expect(first.plan!.steps).toEqual([]);
        const tree = baseTree();
        for (const { edits, apply, outside, at } of saves) {
          for (const edit of edits) edit(tree);
          write(dir, tree, hostTag);
          await makeOutside(client, outside, at);
          const inc = await planner.prepare({ full: outside !== 'none' });
          const full = await preparePlan(input, client);
          expect(hasErrors(inc.problems)).toBe(hasErrors(full.problems));
          if (!full.plan) continue;
          expect(said(inc.plan!)).toEqual(said(full.plan));
          const fresh = new LiveIndex('subset', inc.identities);
          fresh.load(await readLiveState(client));
          expect(liveSaid(inc.live as LiveIndex)).toEqual(liveSaid(fresh));
          if (!apply || !inc.plan!.steps.length || inc.plan!.conflicts.length || inc.plan!.blocked.length) continue;
          // Applied as watch applies: the next run reads again what this one wrote.
          planner.applied(inc.plan!, await applyPlan(inc.plan!, { client, secrets: secretsFromMap(inc.secrets) }));
        }
      } finally {
        await removeOutside(client);
        rmSync(dir, { recursive: true, force: true });
      }
    }), { numRuns: 30 });
  }, 300_000);

  /** Saves of `steps` (each edits the tree, maybe makes something outside), planned but not applied; each plan compared with a full plan. */
  async function saveAfterSave(steps: { edit: Edit; outside?: Outside }[]): Promise<void> {
    const dir = manifestDir(files(baseTree(), hostTag));
    try {
      await applyDir(client, dir, 'subset');
      const input = { root: dir, stack: 'subset', env: {} };
      const cache = new ManifestCache();
      const planner = watchPlanner(input, client, cache).planner;
      await planner.prepare();
      const tree = baseTree();
      for (const { edit, outside = 'none' } of steps) {
        edit(tree);
        write(dir, tree, hostTag);
        await makeOutside(client, outside, 0);
        const inc = await planner.prepare({ full: outside !== 'none' });
        const full = await preparePlan(input, client);
        expect(hasErrors(inc.problems)).toBe(hasErrors(full.problems));
        if (full.plan) expect(said(inc.plan!)).toEqual(said(full.plan));
      }
    } finally {
      await removeOutside(client);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('a run that was to read everything but stopped at the manifests\' problems leaves the read to the next run', async () => {
    await saveAfterSave([
      // A name twice, and a copy of a backend made meanwhile: the drift check finds the manifests invalid.
      { edit: (t) => t.edges.push({ ...structuredClone(t.edges[0]), file: 1, hostport: 'twice' }), outside: 'copy' },
      // Valid again: the copy is found (and deleted), as a full plan finds it.
      { edit: (t) => { t.edges.pop(); } },
    ]);
  });

  it('an object renamed and planned again is compared with its live object, which still has the old name', async () => {
    await saveAfterSave([
      { edit: (t) => { const e = t.edges[3]; [e.renamedFrom, e.name, e.hostport] = [e.name, `${e.name}x`, e.name]; e.cas = ['ca-0']; } },
      // Not applied: the edge is planned again; its CAs are read as names through the live object marked with the old one.
      { edit: (t) => { const r = t.edges[3].routes[0]; [r.renamedFrom, r.name] = [r.name, `${r.name}x`]; } },
    ]);
  });

  it('a one-field save plans the object and what refers to it, not the whole tree', async () => {
    const dir = manifestDir(files(baseTree(), hostTag));
    await applyDir(client, dir, 'subset');
    const input = { root: dir, stack: 'subset', env: {} };
    const cache = new ManifestCache();
    const planner = watchPlanner(input, client, cache).planner;
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
