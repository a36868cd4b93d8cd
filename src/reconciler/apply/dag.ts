import { MinHeap } from '../../util/min-heap.js';
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
  /** Asked before each node starts: false stops new starts as an abort does (the caller aborts `signal` with it). */
  mayStart?: () => boolean;
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

  // Nodes are worked on by their index in the plan, which is also the order ready nodes start in:
  // the planner's order is what a reader of the plan expects.
  const count = nodes.length;
  const ids = nodes.map((n) => n.id);
  const index = new Map<string, number>();
  for (let i = 0; i < count; i++) index.set(ids[i], i);
  const waiting = new Int32Array(count);
  const dependents: number[][] = Array.from({ length: count }, () => []);
  for (let i = 0; i < count; i++) {
    const deps = nodes[i].dependsOn;
    const seen = deps.length > 1 ? new Set<string>() : undefined;
    for (const d of deps) {
      if (seen) {
        if (seen.has(d)) continue;
        seen.add(d);
      }
      waiting[i]++;
      dependents[index.get(d)!].push(i);
    }
  }
  const ready = new MinHeap();
  for (let i = 0; i < count; i++) if (waiting[i] === 0) ready.push(i);
  const finished = new Uint8Array(count);
  let ended = 0;
  let running = 0;
  const signal = opts.signal ?? new AbortController().signal;

  const skip = (first: number, because: string) => {
    const queue = [first];
    for (let q = 0; q < queue.length; q++) {
      const x = queue[q];
      if (finished[x]) continue;
      finished[x] = 1;
      ended++;
      result.skipped.push({ id: ids[x], because });
      emit({ type: 'skipped', node: nodes[x], because });
      for (const child of dependents[x]) if (!finished[child]) queue.push(child);
    }
  };

  return new Promise<DagResult>((resolve) => {
    // Removed once the graph ends: watch passes one long-lived signal to every run.
    const onAbort = () => pump();
    const pump = () => {
      const stop = () => {
        for (let i = ready.pop(); i !== undefined; i = ready.pop()) skip(i, 'aborted');
      };
      if (opts.signal?.aborted) stop();
      while (running < limit && ready.size) {
        if (opts.mayStart && !opts.mayStart()) stop();
        else start(ready.pop()!);
      }
      if (running === 0 && ready.size === 0) {
        // Anything left never became ready: its dependencies were aborted before they started.
        if (ended < count) for (let i = 0; i < count; i++) if (!finished[i]) skip(i, 'aborted');
        result.ms = now() - started;
        opts.signal?.removeEventListener('abort', onAbort);
        resolve(result);
      }
    };

    const start = (i: number) => {
      const n = nodes[i];
      running++;
      const t0 = now();
      emit({ type: 'start', node: n, running });
      const ctx: NodeContext = {
        signal,
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
          finished[i] = 1;
          ended++;
          result.done.push(ids[i]);
          emit({ type: 'done', node: n, ms: now() - t0 });
          for (const child of dependents[i]) {
            if (--waiting[child] === 0 && !finished[child]) ready.push(child);
          }
          pump();
        },
        (err: unknown) => {
          running--;
          finished[i] = 1;
          ended++;
          const error = message(err);
          result.failed.push({ id: ids[i], error });
          emit({ type: 'failed', node: n, ms: now() - t0, error });
          for (const child of dependents[i]) skip(child, ids[i]);
          pump();
        },
      );
    };

    opts.signal?.addEventListener('abort', onAbort, { once: true });
    pump();
  });
}
