import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkGraph, runDag, type DagEvent, type DagNode } from '../../src/reconciler/apply/dag.js';

const n = (id: string, ...dependsOn: string[]): DagNode => ({ id, dependsOn });
const tick = () => new Promise((r) => setTimeout(r, 1));

describe('runDag', () => {
  it('starts a node only after all its dependencies succeeded', async () => {
    const finished: string[] = [];
    const nodes = [n('a'), n('b', 'a'), n('c', 'a', 'b'), n('d')];
    const result = await runDag(nodes, async (node) => {
      for (const d of node.dependsOn) expect(finished).toContain(d);
      await tick();
      finished.push(node.id);
    });
    expect(result.done.sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(result.failed).toEqual([]);
    expect(result.skipped).toEqual([]);
    expect(result.total).toBe(4);
  });

  it('never runs more than `parallelism` nodes at once, and uses all of it', async () => {
    let now = 0;
    let peak = 0;
    const nodes = Array.from({ length: 40 }, (_, i) => n(`s${i}`));
    await runDag(nodes, async () => {
      now++;
      peak = Math.max(peak, now);
      await tick();
      now--;
    }, { parallelism: 3 });
    expect(peak).toBe(3);
  });

  it('a failure skips its dependents transitively; independent nodes still finish', async () => {
    const events: DagEvent[] = [];
    const nodes = [n('ca'), n('edge', 'ca'), n('route', 'edge'), n('route2', 'edge', 'other'), n('other'), n('lone')];
    const ran: string[] = [];
    const result = await runDag(nodes, async (node) => {
      ran.push(node.id);
      await tick();
      if (node.id === 'edge') throw new Error('HTTP 400: hostports: bad');
    }, { onEvent: (e) => events.push(e) });
    expect(result.failed).toEqual([{ id: 'edge', error: 'HTTP 400: hostports: bad' }]);
    expect(result.skipped.map((s) => s.id).sort()).toEqual(['route', 'route2']);
    expect(result.skipped.every((s) => s.because === 'edge')).toBe(true);
    expect(result.done.sort()).toEqual(['ca', 'lone', 'other']);
    expect(ran).not.toContain('route');
    expect(events.filter((e) => e.type === 'skipped')).toHaveLength(2);
  });

  it('a synchronous throw in the runner is a failure like any other', async () => {
    const result = await runDag([n('a'), n('b', 'a')], (node) => { if (node.id === 'a') throw new Error('boom'); return Promise.resolve(); });
    expect(result.failed).toEqual([{ id: 'a', error: 'boom' }]);
    expect(result.skipped).toEqual([{ id: 'b', because: 'a' }]);
  });

  it('starts ready nodes in plan order', async () => {
    const order: string[] = [];
    await runDag([n('z'), n('y'), n('x')], async (node) => { order.push(node.id); }, { parallelism: 1 });
    expect(order).toEqual(['z', 'y', 'x']);
  });

  it('emits start/done/retry events for renderers', async () => {
    const events: string[] = [];
    await runDag([n('a')], async (_node, ctx) => { ctx.retrying({ attempt: 2, delayMs: 10, reason: 'HTTP 503' }); }, { onEvent: (e) => events.push(`${e.type}:${e.node.id}`) });
    expect(events).toEqual(['start:a', 'retry:a', 'done:a']);
  });

  it('abort stops new starts and reports the rest as skipped', async () => {
    const ac = new AbortController();
    const nodes = Array.from({ length: 10 }, (_, i) => n(`s${i}`, ...(i ? [`s${i - 1}`] : [])));
    const result = await runDag(nodes, async (node) => { if (node.id === 's2') ac.abort(); await tick(); }, { signal: ac.signal, parallelism: 2 });
    expect(result.done).toEqual(['s0', 's1', 's2']);
    expect(result.skipped).toHaveLength(7);
    expect(result.skipped.every((s) => s.because === 'aborted')).toBe(true);
  });

  it('empty graphs finish at once', async () => {
    expect((await runDag([], async () => {})).total).toBe(0);
  });

  it('rejects cycles, unknown dependencies and duplicate ids up front', () => {
    expect(() => checkGraph([n('a', 'b'), n('b', 'a')])).toThrow(/cycle/);
    expect(() => checkGraph([n('a', 'nope')])).toThrow(/unknown step nope/);
    expect(() => checkGraph([n('a'), n('a')])).toThrow(/duplicate/);
    // A deep chain must not overflow the stack.
    const deep = Array.from({ length: 20_000 }, (_, i) => n(`s${i}`, ...(i ? [`s${i - 1}`] : [])));
    expect(() => checkGraph(deep)).not.toThrow();
  });

  it('property: every node ends exactly once; skipped ⇔ some dependency did not succeed', async () => {
    const graph = fc.integer({ min: 1, max: 25 }).chain((size) =>
      fc.tuple(
        fc.array(fc.array(fc.nat({ max: size - 1 }), { maxLength: 3 }), { minLength: size, maxLength: size }),
        fc.array(fc.boolean(), { minLength: size, maxLength: size }),
        fc.integer({ min: 1, max: 5 }),
      ));
    await fc.assert(fc.asyncProperty(graph, async ([deps, fails, parallelism]) => {
      // Only edges to lower indexes: acyclic by construction.
      const nodes = deps.map((ds, i) => n(`s${i}`, ...[...new Set(ds.filter((d) => d < i))].map((d) => `s${d}`)));
      const result = await runDag(nodes, async (node) => {
        await Promise.resolve();
        if (fails[Number(node.id.slice(1))]) throw new Error('x');
      }, { parallelism });
      const ended = [...result.done, ...result.failed.map((f) => f.id), ...result.skipped.map((s) => s.id)];
      expect(ended.sort()).toEqual(nodes.map((x) => x.id).sort());
      const ok = new Set(result.done);
      for (const node of nodes) {
        const allDepsOk = node.dependsOn.every((d) => ok.has(d));
        expect(result.skipped.some((s) => s.id === node.id)).toBe(!allDepsOk);
      }
    }), { numRuns: 200 });
  });
});

describe('runDag and long-lived signals', () => {
  it('leaves no abort listener behind (watch reuses one signal for every run)', async () => {
    const ac = new AbortController();
    let added = 0, removed = 0;
    const add = ac.signal.addEventListener.bind(ac.signal);
    const rem = ac.signal.removeEventListener.bind(ac.signal);
    ac.signal.addEventListener = ((...a: Parameters<typeof add>) => { added++; return add(...a); }) as typeof add;
    ac.signal.removeEventListener = ((...a: Parameters<typeof rem>) => { removed++; return rem(...a); }) as typeof rem;
    for (let i = 0; i < 20; i++) await runDag([n('a'), n('b', 'a')], async () => {}, { signal: ac.signal });
    expect(added).toBe(20);
    expect(removed).toBe(20);
  });
});

/**
 * A plan from empty of the reconciler benchmark's shape at `scale` (10: about 62,000 steps): CAs,
 * failover backends (every other one after the one before), edges naming two CAs, five routes per
 * edge each after its edge and a backend. Each node counts the reads of its `id` and `dependsOn`:
 * the scheduler's work per node, whatever the machine's speed.
 */
function benchShapedPlan(scale: number, reads: { n: number }): DagNode[] {
  const counted = (id: string, dependsOn: string[]): DagNode => ({
    get id() { reads.n++; return id; },
    get dependsOn() { reads.n++; return dependsOn; },
  });
  const nodes: DagNode[] = [];
  const cas = 100 * scale, backends = 100 * scale, edges = 1000 * scale;
  for (let i = 0; i < cas; i++) nodes.push(counted(`CertificateAuthority/ca-${i}:create`, []));
  for (let i = 0; i < backends; i++) nodes.push(counted(`FailoverBackend/pool-${i}:create`, i % 2 ? [`FailoverBackend/pool-${i - 1}:create`] : []));
  for (let e = 0; e < edges; e++) {
    nodes.push(counted(`HTTPSEdge/edge-${e}:create`, [`CertificateAuthority/ca-${e % cas}:create`, `CertificateAuthority/ca-${(e + 1) % cas}:create`]));
    for (let r = 0; r < 5; r++) {
      nodes.push(counted(`HTTPSEdge/edge-${e}/routes/r${r}:create`, [`HTTPSEdge/edge-${e}:create`, `FailoverBackend/pool-${(e + r) % backends}:create`]));
    }
  }
  return nodes;
}

describe('runDag at scale', () => {
  it('schedules 62,000 steps of the benchmark plan\'s shape in linear work: 10× the steps, < 15× the reads of their ids and dependencies', async () => {
    const work = async (scale: number) => {
      const reads = { n: 0 };
      const nodes = benchShapedPlan(scale, reads);
      const order: string[] = [];
      const result = await runDag(nodes, async () => {}, { parallelism: 8, onEvent: (e) => { if (e.type === 'start') order.push(e.node.id); } });
      expect(result.done).toHaveLength(nodes.length);
      return { steps: nodes.length, reads: reads.n, order };
    };
    const small = await work(1);
    const large = await work(10);
    expect(small.steps).toBe(6_200);
    expect(large.steps).toBe(62_000);
    expect(large.reads / small.reads).toBeLessThan(15);
    // Still in plan order among what is ready: every CA before any backend's dependent starts.
    expect(large.order.slice(0, 1000).every((id) => id.startsWith('CertificateAuthority/'))).toBe(true);
  });
});
