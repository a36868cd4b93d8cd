import fc from 'fast-check';
import { stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import type { Body } from '../../src/kinds/types.js';
import { renderJson } from '../../src/reconciler/render/json.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';
import { planFromState } from '../helpers/plan-lists.js';
import { expandObserved } from '../helpers/scenario.js';

/**
 * The speed layer is optional: the plan `preparePlan` makes with what it works out while the pages
 * arrive (pairs, objects found settled, normal forms computed ahead) is the plan of the diff alone
 * from a fresh memo. Random stacks (failover backends, edges with routes, renames) against random
 * live states: missing, drifted, duplicated, renamed, unmanaged (adopted or not), pruned, another
 * stack's, the same but for the user's metadata or the marker; with random targets and page sizes. EDGEPLANE_PROPERTY_RUNS for a longer run.
 */
const RUNS = Number(process.env.EDGEPLANE_PROPERTY_RUNS ?? 40);
const STACK = 'hints';

// `meta`: the same fields, other metadata of the user's; `protect`: a marker that says protected.
const live = fc.constantFrom('absent', 'same', 'drift', 'twice', 'unmanaged', 'other-stack', 'meta', 'protect');
const route = fc.record({ match: fc.constantFrom('/', '/a/', '/b/', '/c/'), live, renamed: fc.boolean() });
const edge = fc.record({
  host: fc.constantFrom('a', 'b', 'c', 'd'),
  description: fc.constantFrom('one', 'two'),
  live,
  renamed: fc.boolean(),
  routes: fc.array(route, { maxLength: 4 }),
});
const backend = fc.record({ description: fc.constantFrom('x', 'y'), live, renamed: fc.boolean() });
const world = fc.record({
  edges: fc.array(edge, { maxLength: 4 }),
  backends: fc.array(backend, { maxLength: 5 }),
  pruned: fc.nat(3),
  adopt: fc.boolean(),
  targets: fc.option(fc.subarray(['HTTPSEdge/e-0', 'HTTPSEdge/e-1/routes/r-0', 'FailoverBackend/f-0', 'FailoverBackend/f-9', 'HTTPSEdge/e-*'], { minLength: 1 }), { nil: undefined }),
  pageSize: fc.constantFrom(1, 2, 100),
});

type World = typeof world extends fc.Arbitrary<infer W> ? W : never;

let seq = 0;
const id = (prefix: string) => `${prefix}_${String(++seq).padStart(27, '0')}`;

/** What the live object of a manifest object is, by its `live` fate: none, one or two bodies. */
function liveOf(fate: string, identity: string, body: Body, drifted: Body): Body[] {
  const marker = (stack = STACK, protect?: boolean) => ({ $marker: { id: identity, stack, protect } });
  switch (fate) {
    case 'same': return [{ ...body, ...marker() }];
    case 'meta': return [{ ...body, ...marker(), $metadata: '{"team":"by hand"}' }];
    case 'protect': return [{ ...body, ...marker(STACK, true) }];
    case 'drift': return [{ ...drifted, ...marker() }];
    case 'twice': return [{ ...body, ...marker() }, { ...drifted, ...marker() }];
    case 'unmanaged': return [{ ...body }];
    case 'other-stack': return [{ ...body, ...marker('elsewhere') }];
    default: return [];
  }
}

function build(w: World): { yaml: string; observed: Record<string, Body[]> } {
  const docs: object[] = [];
  const backends: Body[] = [];
  const edges: Body[] = [];
  w.backends.forEach((b, i) => {
    const name = `f-${i}`;
    const old = b.renamed ? `f-old-${i}` : name;
    docs.push({ kind: 'FailoverBackend', name, ...(b.renamed ? { renamed_from: old } : {}), description: b.description, backends: ['bkdhr_000000000000000000000000001'] });
    const body = { description: b.description, backends: ['bkdhr_000000000000000000000000001'] };
    for (const x of liveOf(b.live, `FailoverBackend/${old}`, body, { ...body, description: 'drifted' })) backends.push({ id: id('bkdfo'), ...x });
  });
  for (let i = 0; i < w.pruned; i++) backends.push({ id: id('bkdfo'), backends: ['bkdhr_000000000000000000000000002'], $marker: { id: `FailoverBackend/gone-${i}` } });
  w.edges.forEach((e, i) => {
    const name = `e-${i}`;
    const old = e.renamed ? `e-old-${i}` : name;
    const hostports = [`${e.host}${i}.example.com:443`];
    const seen = new Set<string>();
    const routes = e.routes.filter((r) => !seen.has(r.match) && seen.add(r.match));
    docs.push({
      kind: 'HTTPSEdge', name, ...(e.renamed ? { renamed_from: old } : {}), description: e.description, hostports,
      routes: routes.map((r, j) => ({ name: `r-${j}`, ...(r.renamed ? { renamed_from: `r-old-${j}` } : {}), match_type: 'path_prefix', match: r.match })),
    });
    const edgeId = id('edghts');
    const liveRoutes = routes.flatMap((r, j) => {
      const body = { edge_id: edgeId, match_type: 'path_prefix', match: r.match };
      return liveOf(r.live, `HTTPSEdge/${old}/routes/${r.renamed ? `r-old-${j}` : `r-${j}`}`, body, { ...body, description: 'drifted' }).map((x) => ({ id: id('edghtsrt'), ...x }));
    });
    const body = { description: e.description, hostports };
    const edgeLive = liveOf(e.live, `HTTPSEdge/${old}`, body, { ...body, description: 'drifted' });
    edgeLive.forEach((x, k) => edges.push({ id: k ? id('edghts') : edgeId, ...x, routes: k ? [] : liveRoutes }));
  });
  return { yaml: docs.map((d) => stringify(d)).join('---\n') || '{}\n', observed: { backends, https_edges: edges } };
}

afterAll(() => cleanupDirs());

describe('plan hints', () => {
  it('change nothing: the plan with them is the plan without them, on random stacks and live states', async () => {
    await fc.assert(fc.asyncProperty(world, async (w) => {
      const { yaml, observed } = build(w);
      const root = manifestDir({ 'stack.yaml': yaml });
      const input = { root, cwd: root, stack: STACK, env: {}, adopt: w.adopt, targets: w.targets, threshold: { ratio: 1, minOwned: 1000 } };
      const lists = expandObserved(observed, STACK);
      // The outcome: problems and the plan as JSON, or what stopped it (a target naming nothing).
      const outcome = (hints: boolean) => planFromState(input, lists, 'https://api.example.test', { pageSize: w.pageSize, hints })
        .then((r) => ({ problems: r.problems, plan: r.plan && renderJson(r.plan) }), (err: Error) => ({ thrown: err.message }));
      expect(await outcome(true)).toEqual(await outcome(false));
    }), { numRuns: RUNS });
  }, 60_000);
});
