/**
 * Runs nodes of a dependency graph with bounded concurrency. A node starts once every node it
 * depends on has succeeded; a failed node skips everything that depends on it (transitively),
 * while independent nodes run to the end — so one bad object never blocks unrelated ones, and a
 * second apply converges on what is left.
 */
export interface DagNode { id: string; dependsOn: readonly string[] }

export type DagEvent<N extends DagNode = DagNode> =
  | { type: 'start'; node: N; running: number }
  | { type: 'done'; node: N; ms: number }
  | { type: 'failed'; node: N; ms: number; error: string }
  | { type: 'skipped'; node: N; because: string }
  | { type: 'retry'; node: N; attempt: number; delayMs: number; reason: string };

export interface DagResult {
  total: number;
  done: string[];
  failed: { id: string; error: string }[];
  /** `because`: the failed (or aborted) dependency that caused the skip. */
  skipped: { id: string; because: string }[];
  ms: number;
}

export interface NodeContext {
  signal: AbortSignal;
  /** Tells progress renderers that the node is retrying (the executor itself never retries). */
  retrying(info: { attempt: number; delayMs: number; reason: string }): void;
}

export interface DagOptions<N extends DagNode> {
  /** Nodes running at once; default 8. */
  parallelism?: number;
  onEvent?: (e: DagEvent<N>) => void;
  /** Aborting stops new starts; nodes not started are reported as skipped ("aborted"). */
  signal?: AbortSignal;
  now?: () => number;
}

export const DEFAULT_PARALLELISM = 8;

/** Throws on unknown dependencies and cycles: a plan with either is a planner bug, not a runtime event. */
export function checkGraph(nodes: readonly DagNode[]): void {
  const ids = new Set<string>();
  for (const n of nodes) {
    if (ids.has(n.id)) throw new Error(`duplicate step id ${n.id}`);
    ids.add(n.id);
  }
  for (const n of nodes) {
    for (const d of n.dependsOn) if (!ids.has(d)) throw new Error(`step ${n.id} depends on unknown step ${d}`);
  }
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const state = new Map<string, 1 | 2>(); // 1 visiting, 2 done
  for (const start of nodes) {
    if (state.get(start.id)) continue;
    // Iterative DFS: plans can be deep (long failover chains) and recursion would blow the stack.
    const stack: { id: string; i: number }[] = [{ id: start.id, i: 0 }];
    state.set(start.id, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const deps = byId.get(top.id)!.dependsOn;
      if (top.i < deps.length) {
        const d = deps[top.i++];
        const s = state.get(d);
        if (s === 1) throw new Error(`dependency cycle through step ${d}`);
        if (!s) { state.set(d, 1); stack.push({ id: d, i: 0 }); }
      } else {
        state.set(top.id, 2);
        stack.pop();
      }
    }
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function runDag<N extends DagNode>(
  nodes: readonly N[],
  run: (node: N, ctx: NodeContext) => Promise<void>,
  opts: DagOptions<N> = {},
): Promise<DagResult> {
  checkGraph(nodes);
  const now = opts.now ?? (() => performance.now());
  const limit = Math.max(1, Math.floor(opts.parallelism ?? DEFAULT_PARALLELISM));
  const emit = opts.onEvent ?? (() => {});
  const started = now();
  const result: DagResult = { total: nodes.length, done: [], failed: [], skipped: [], ms: 0 };

  const dependents = new Map<string, N[]>();
  const waiting = new Map<string, number>();
  for (const n of nodes) {
    waiting.set(n.id, new Set(n.dependsOn).size);
    for (const d of new Set(n.dependsOn)) {
      if (!dependents.has(d)) dependents.set(d, []);
      dependents.get(d)!.push(n);
    }
  }
  // Ready nodes start in plan order: the planner's order is what a reader of the plan expects.
  const order = new Map(nodes.map((n, i) => [n.id, i]));
  const ready: N[] = nodes.filter((n) => waiting.get(n.id) === 0);
  const finished = new Set<string>();
  let running = 0;

  const skip = (n: N, because: string) => {
    const queue: [N, string][] = [[n, because]];
    while (queue.length) {
      const [x, why] = queue.shift()!;
      if (finished.has(x.id)) continue;
      finished.add(x.id);
      result.skipped.push({ id: x.id, because: why });
      emit({ type: 'skipped', node: x, because: why });
      for (const child of dependents.get(x.id) ?? []) queue.push([child, why]);
    }
  };

  return new Promise<DagResult>((resolve) => {
    // Removed once the graph ends: watch passes one long-lived signal to every run.
    const onAbort = () => pump();
    const pump = () => {
      if (opts.signal?.aborted) {
        for (const n of ready.splice(0)) skip(n, 'aborted');
      }
      while (running < limit && ready.length) {
        ready.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
        start(ready.shift()!);
      }
      if (running === 0 && ready.length === 0) {
        // Anything left never became ready: its dependencies were aborted before they started.
        for (const n of nodes) if (!finished.has(n.id)) skip(n, 'aborted');
        result.ms = now() - started;
        opts.signal?.removeEventListener('abort', onAbort);
        resolve(result);
      }
    };

    const start = (n: N) => {
      running++;
      const t0 = now();
      emit({ type: 'start', node: n, running });
      const ctx: NodeContext = {
        signal: opts.signal ?? new AbortController().signal,
        retrying: (info) => emit({ type: 'retry', node: n, ...info }),
      };
      let p: Promise<void>;
      try {
        p = run(n, ctx);
      } catch (err) {
        p = Promise.reject(err);
      }
      p.then(
        () => {
          running--;
          finished.add(n.id);
          result.done.push(n.id);
          emit({ type: 'done', node: n, ms: now() - t0 });
          for (const child of dependents.get(n.id) ?? []) {
            const left = waiting.get(child.id)! - 1;
            waiting.set(child.id, left);
            if (left === 0 && !finished.has(child.id)) ready.push(child);
          }
          pump();
        },
        (err: unknown) => {
          running--;
          finished.add(n.id);
          const error = message(err);
          result.failed.push({ id: n.id, error });
          emit({ type: 'failed', node: n, ms: now() - t0, error });
          for (const child of dependents.get(n.id) ?? []) skip(child, n.id);
          pump();
        },
      );
    };

    opts.signal?.addEventListener('abort', onAbort, { once: true });
    pump();
  });
}
