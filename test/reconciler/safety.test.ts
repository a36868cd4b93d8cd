import { describe, expect, it } from 'vitest';
import { liveView } from '../../src/reconciler/plan/live-view.js';
import { DEFAULT_THRESHOLD, safetyBlocks } from '../../src/reconciler/plan/safety.js';
import type { ObservedObject } from '../../src/reconciler/plan/state.js';
import { MARKER_CHANGE, type Action, type Change, type Step } from '../../src/reconciler/plan/types.js';

/** Ten owned routes (the threshold applies from ten) and four steps on four of them: 40 % > 30 %. */
const observed = Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, kind: { name: 'httpsEdgeRoute' }, owner: { type: 'this' }, marker: { id: `E/routes/r${i}` } })) as unknown as ObservedObject[];
function onFour(action: Action, changes: Change[]): Step[] {
  return [0, 1, 2, 3].map((i) => ({ id: `s${i}`, action, object: { kind: 'httpsEdgeRoute', identity: `E/routes/r${i}`, name: `r${i}`, id: `r${i}` }, changes, dependsOn: [] }) as unknown as Step);
}
const blocked = (steps: Step[]) => safetyBlocks(steps, liveView(observed), DEFAULT_THRESHOLD).map((b) => `${b.kind} ${b.changed}/${b.owned}`);

describe('the safety threshold counts what would be removed or changed', () => {
  it('blocks deletes, replaces and module deletes on more than 30 % of a kind', () => {
    expect(blocked(onFour('delete', []))).toEqual(['httpsEdgeRoute 4/10']);
    expect(blocked(onFour('replace', []))).toEqual(['httpsEdgeRoute 4/10']);
    expect(blocked(onFour('module.delete', []))).toEqual(['httpsEdgeRoute 4/10']);
  });

  it('lets updates pass by default: a new description, a new backend, a changed secret', () => {
    expect(blocked(onFour('update', [{ path: 'description', before: 'x', after: 'y' }]))).toEqual([]);
    expect(blocked(onFour('module.put', [{ path: 'backend.backend_id', before: 'bkdfo_a', after: 'bkdfo_b' }]))).toEqual([]);
    expect(blocked(onFour('update', [{ path: 'oidc.client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true }]))).toEqual([]);
  });

  it('counts updates of the fields and kinds count_updates_of lists, when they change a value the object has', () => {
    const t = (fields: string[], kinds: string[] = []) => ({ ...DEFAULT_THRESHOLD, countUpdatesOf: { fields, kinds } });
    const withT = (steps: Step[], th: ReturnType<typeof t>) => safetyBlocks(steps, liveView(observed), th).map((b) => `${b.kind} ${b.changed}/${b.owned}`);
    expect(withT(onFour('module.put', [{ path: 'backend.backend_id', before: 'bkdfo_a', after: 'bkdfo_b' }]), t(['backend']))).toEqual(['httpsEdgeRoute 4/10']);
    expect(withT(onFour('update', [{ path: 'hostports[0]', before: 'a:443', after: 'b:443' }]), t(['hostports']))).toEqual(['httpsEdgeRoute 4/10']);
    // A secret that changed counts when listed (its value is not shown, but it was there).
    expect(withT(onFour('update', [{ path: MARKER_CHANGE, before: 'secret fingerprints', after: 'secret fingerprints', sensitive: true }, { path: 'oidc.client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true }]), t(['oidc']))).toEqual(['httpsEdgeRoute 4/10']);
    // Another field, or a field whose name only starts the same, does not count.
    expect(withT(onFour('update', [{ path: 'description', before: 'x', after: 'y' }]), t(['hostports']))).toEqual([]);
    expect(withT(onFour('update', [{ path: 'backend_pool', before: 'x', after: 'y' }]), t(['backend']))).toEqual([]);
    // A listed kind: any update of it.
    expect(withT(onFour('update', [{ path: 'description', before: 'x', after: 'y' }]), t([], ['httpsEdgeRoute']))).toEqual(['httpsEdgeRoute 4/10']);
    expect(withT(onFour('update', [{ path: 'description', before: 'x', after: 'y' }]), t([], ['httpsEdge']))).toEqual([]);
  });

  it('does not count adding what an object lacks, even when listed: a module (the backend an interrupted apply had not attached), a value, an ownership marker', () => {
    const all = { ...DEFAULT_THRESHOLD, countUpdatesOf: { fields: ['backend', 'description'], kinds: ['httpsEdgeRoute'] } };
    const withAll = (steps: Step[]) => safetyBlocks(steps, liveView(observed), all).map((b) => `${b.kind} ${b.changed}/${b.owned}`);
    // The apply that finishes an interrupted one must not be blocked: its routes were created, their backends not yet attached.
    expect(withAll(onFour('module.put', [{ path: 'backend.backend_id', after: 'bkdfo_b' }, { path: 'backend.enabled', after: true }]))).toEqual([]);
    expect(withAll(onFour('update', [{ path: 'description', after: 'new' }]))).toEqual([]);
    // Renames and adoption change only the marker.
    expect(withAll(onFour('update', [{ path: MARKER_CHANGE, before: 'prod/E/routes/old', after: 'prod/E/routes/new' }]))).toEqual([]);
  });
});

describe('the safety threshold counts identities, not live copies (duplicates from two applies at once)', () => {
  type O = { id: string; kind: string; marker: string; parentId?: string };
  const obs = (xs: O[]) => xs.map((x) => ({ id: x.id, kind: { name: x.kind }, parentId: x.parentId, owner: { type: 'this' }, marker: { id: x.marker } })) as unknown as ObservedObject[];
  const del = (kind: string, id: string, identity: string) => ({ id: `${identity}:delete:${id}`, action: 'delete', object: { kind, identity, name: identity, id }, changes: [], dependsOn: [] }) as unknown as Step;
  const backends = (n: number, copies: number) => Array.from({ length: n }, (_, i) => Array.from({ length: copies }, (_, c) => ({ id: `fo${i}-${c}`, kind: 'failoverBackend', marker: `FailoverBackend/b${i}` }))).flat();
  const check = (steps: Step[], observed: ObservedObject[]) => safetyBlocks(steps, liveView(observed), DEFAULT_THRESHOLD).map((b) => `${b.kind} ${b.changed}/${b.owned} (${b.deletes} deleted)`);

  it('deleting a duplicate while a copy of it stays does not count; the copies are one owned object', async () => {
    // Ten identities, each made twice: deleting every second copy removes nothing the stack manages.
    const steps = Array.from({ length: 10 }, (_, i) => del('failoverBackend', `fo${i}-1`, `FailoverBackend/b${i}`));
    expect(check(steps, obs(backends(10, 2)))).toEqual([]);
    // Deleting every copy of four of them deletes four of ten (not eight of twenty).
    const pruned = [6, 7, 8, 9].flatMap((i) => [0, 1].map((c) => del('failoverBackend', `fo${i}-${c}`, `FailoverBackend/b${i}`)));
    expect(check(pruned, obs(backends(10, 2)))).toEqual(['failoverBackend 4/10 (4 deleted)']);
    // Ten identities, four of the kept ones left twice: the extra copies do not lower the share (4 of 10, not 4 of 14).
    const extra = [6, 7, 8, 9].map((i) => ({ id: `fo${i}-1`, kind: 'failoverBackend', marker: `FailoverBackend/b${i}` }));
    const four = [0, 1, 2, 3].map((i) => del('failoverBackend', `fo${i}-0`, `FailoverBackend/b${i}`));
    expect(check(four, obs([...backends(10, 1), ...extra]))).toEqual(['failoverBackend 4/10 (4 deleted)']);
  });

  it('a copy that goes with its parent does not keep its identity alive', async () => {
    // Two edges carrying one identity, each with the same ten routes; the duplicate edge is deleted
    // (its routes with it), and four routes of the kept edge are pruned: four of ten routes go.
    const edges = [{ id: 'e1', kind: 'httpsEdge', marker: 'HTTPSEdge/web' }, { id: 'e2', kind: 'httpsEdge', marker: 'HTTPSEdge/web' }];
    const routes = edges.flatMap((e) => Array.from({ length: 10 }, (_, i) => ({ id: `${e.id}-r${i}`, kind: 'httpsEdgeRoute', marker: `HTTPSEdge/web/routes/r${i}`, parentId: e.id })));
    const steps = [del('httpsEdge', 'e2', 'HTTPSEdge/web'), ...[0, 1, 2, 3].map((i) => del('httpsEdgeRoute', `e1-r${i}`, `HTTPSEdge/web/routes/r${i}`))];
    expect(check(steps, obs([...edges, ...routes]))).toEqual(['httpsEdgeRoute 4/10 (4 deleted)']);
  });
});

describe('children deleted with their parent', () => {
  it('are counted by the threshold: deleting 3 of 20 edges that hold 150 of 167 routes is blocked for the routes', async () => {
    const { planFromState } = await import('../helpers/plan-lists.js');
    const { stringify } = await import('yaml');
    const { cleanupDirs, manifestDir } = await import('../helpers/reconcile.js');
    const { encodeMetadata, MARKER_VERSION, TOOL } = await import('../../src/reconciler/ownership/marker.js');
    const marker = (id: string) => encodeMetadata({ tool: TOOL, v: MARKER_VERSION, stack: 'big', id }, undefined);
    // 20 edges; the first 3 hold 50 routes each, the others one each (167 routes).
    const counts = Array.from({ length: 20 }, (_, i) => (i < 3 ? 50 : 1));
    const live = counts.map((n, i) => ({
      id: `edghts_${String(i).padStart(27, '0')}`, hostports: [`e${i}.example.com:443`], metadata: marker(`HTTPSEdge/e${i}`),
      routes: Array.from({ length: n }, (_, j) => ({ id: `edghtsrt_${String(i * 100 + j).padStart(27, '0')}`, edge_id: `edghts_${String(i).padStart(27, '0')}`, match_type: 'path_prefix', match: `/r${j}/`, metadata: marker(`HTTPSEdge/e${i}/routes/r${j}`) })),
    }));
    // The manifests keep edges 3..19 (and their one route): edges 0..2 leave, with their 150 routes.
    const docs = counts.map((n, i) => ({ kind: 'HTTPSEdge', name: `e${i}`, hostports: [`e${i}.example.com:443`], routes: Array.from({ length: n }, (_, j) => ({ name: `r${j}`, match_type: 'path_prefix', match: `/r${j}/` })) })).slice(3);
    try {
      const root = manifestDir({ 'edges.yaml': docs.map((d) => stringify(d)).join('---\n') });
      const { plan, problems } = (await planFromState({ root, stack: 'big', env: {} }, { https_edges: live } as never, 'https://api.example.test'));
      expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
      const deletes = plan!.steps.filter((s) => s.action === 'delete');
      expect(deletes.map((s) => [s.object.identity, s.cascade?.length])).toEqual([['HTTPSEdge/e0', 50], ['HTTPSEdge/e1', 50], ['HTTPSEdge/e2', 50]]);
      expect(plan!.blocked.map((b) => `${b.kind} ${b.deletes}/${b.owned}`)).toEqual(['httpsEdgeRoute 150/167']);
    } finally {
      cleanupDirs();
    }
  });
});
