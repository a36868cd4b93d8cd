import type { ApiClient } from '../../client/api-client.js';
import type { DagEvent } from '../apply/dag.js';
import { applyPlan, type ApplyResult } from '../apply/execute.js';
import { secretsFromMap } from '../apply/materialize.js';
import { hasErrors, type Problem } from '../manifests/problems.js';
import type { PlanInput } from '../pipeline.js';
import { withoutPrunes } from '../plan/prunes.js';
import type { ObservedObject } from '../plan/state.js';
import type { Plan, Step } from '../plan/types.js';
import { watchManifestFiles, type FileWatch } from './files.js';
import { IncrementalPlanner, type LiveRead } from './incremental.js';
import { ManifestCache } from './manifest-cache.js';
import { manifestFiles } from '../manifests/load.js';
import { WatchLoop, type RunContext, type RunOutcome, type RunTrigger } from './loop.js';

/** What a watch session tells its renderer; the CLI prints these, tests collect them. */
export type WatchReport =
  | { type: 'ready'; root: string; stack: string; target: string }
  | { type: 'run-start'; runId: string; trigger: RunTrigger; paths: string[] }
  | { type: 'invalid'; runId: string; problems: Problem[] }
  /**
   * `apply`: a save's plan, applied next; `repair`: an --interval run's plan under --repair
   * (drift made elsewhere), applied next; `drift`: the same without --repair, reported only;
   * `preview`: --plan-only.
   */
  | { type: 'plan'; runId: string; plan: Plan; mode: 'apply' | 'repair' | 'preview' | 'drift'; skippedPrunes: number; read: LiveRead }
  | { type: 'step'; runId: string; event: DagEvent<Step> }
  | { type: 'applied'; runId: string; result: ApplyResult }
  | { type: 'blocked'; runId: string; plan: Plan }
  /** The files changed after they were read: nothing applied, the next run plans the newer save. */
  | { type: 'superseded'; runId: string }
  | { type: 'run-end'; runId: string; status: RunOutcome['status']; ms: number; error?: string }
  | { type: 'retry-scheduled'; runId: string; attempt: number; delayMs: number }
  | { type: 'watch-error'; error: string };

export interface WatchSessionOptions {
  input: Omit<PlanInput, 'env'> & { env: Record<string, string | undefined> };
  client: ApiClient;
  /** Deletions of objects gone from the manifests; off by default (a half-saved file must not delete). */
  prune?: boolean;
  /** Show plans, apply nothing. */
  planOnly?: boolean;
  /** Periodic re-plan; without `repair` drift is reported, with it it is undone. */
  intervalMs?: number;
  repair?: boolean;
  parallelism?: number;
  debounceMs?: number;
  stableMs?: number;
  report(r: WatchReport): void;
}

export interface WatchSession {
  ready: Promise<void>;
  /** Resolves when no run is running or queued (tests). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `watch`: file saves → validate → plan → apply, with the loop's debounce, serial runs, run ids
 * and retry with backoff. The client stays open for the whole session (the embedded database is
 * opened once), and every run reads the manifests and the live state again.
 */
export function startWatchSession(opts: WatchSessionOptions): WatchSession {
  const root = opts.input.root;
  const cache = new ManifestCache();
  const planner = new IncrementalPlanner(opts.input, opts.client, (r) => cache.load(r, opts.input.cwd));
  const run = async (ctx: RunContext): Promise<RunOutcome> => {
    // The directory emptied while watching (files moved, a checkout of a branch without them): with
    // --prune the plan would delete every object of the stack. Refused as `watch --prune` is at the
    // start; deleting everything on purpose takes an empty manifest file.
    if (opts.prune && !manifestFiles(root).length) {
      return { status: 'invalid', error: `${root}: no manifest files (.yaml or .yml) here, and with --prune a plan from none would delete every object of the stack: nothing applied; waiting for a save (to delete everything on purpose, add an empty manifest file such as none.yaml)` };
    }
    let prepared;
    try {
      // A drift check and a retry after a failure read everything; a save re-reads what it touches.
      prepared = await planner.prepare({ full: ctx.trigger === 'interval' || ctx.trigger === 'retry' });
    } catch (err) {
      // A file vanishing between listing and reading (an editor's rename-over save) is a bad moment, not an API failure.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { status: 'invalid', error: (err as Error).message };
      planner.invalidate();
      throw err;
    }
    if (hasErrors(prepared.problems) || !prepared.plan) {
      opts.report({ type: 'invalid', runId: ctx.runId, problems: prepared.problems });
      return { status: 'invalid' };
    }
    const interval = ctx.trigger === 'interval';
    const mode = opts.planOnly ? 'preview' : interval ? (opts.repair ? 'repair' : 'drift') : 'apply';
    const { plan, dropped } = opts.prune ? { plan: prepared.plan, dropped: 0 } : withoutPrunes(prepared.plan, prepared.identities, prepared.observed);
    opts.report({ type: 'plan', runId: ctx.runId, plan, mode, skippedPrunes: dropped, read: prepared.read });
    // Nothing is applied while a manifest object collides with an object this stack does not own.
    const applying = mode === 'apply' || mode === 'repair';
    if (plan.conflicts.length && applying) return { status: 'invalid', error: 'conflicts with objects this stack does not own' };
    if (!applying || !plan.steps.length) return { status: 'ok' };
    if (plan.blocked.length) {
      opts.report({ type: 'blocked', runId: ctx.runId, plan });
      return { status: 'invalid' };
    }
    if (cache.changedSinceLoad(root)) {
      // Saved again while planning (or read mid-write): the newer save's run plans it instead.
      opts.report({ type: 'superseded', runId: ctx.runId });
      return { status: 'ok' };
    }
    const result = await applyPlan(plan, {
      client: opts.client, secrets: secretsFromMap(prepared.secrets), parallelism: opts.parallelism, signal: ctx.signal,
      onEvent: (event) => opts.report({ type: 'step', runId: ctx.runId, event }),
    });
    opts.report({ type: 'applied', runId: ctx.runId, result });
    planner.applied(plan, result, prepared.observed);
    if (!result.failed.length && !result.skipped.length) return { status: 'ok' };
    const error = `${result.failed.length} step(s) failed`;
    // Planned from the state kept since the last full read: something may have changed elsewhere.
    // Plan again from a full read (after the retry back-off) before blaming the manifests.
    if (!prepared.read.full) return { status: 'retry', error: `${error}; planning again from a full read of the live state` };
    // A step the API refused (4xx) will fail the same way until the manifests change: wait for a save.
    return { status: 'invalid', error };
  };

  const stableMs = opts.stableMs ?? 50;
  const loop = new WatchLoop({
    run, debounceMs: opts.debounceMs, intervalMs: opts.intervalMs,
    onEvent: (e) => opts.report(e),
  });
  let files: FileWatch | undefined;
  const ready = (async () => {
    files = watchManifestFiles(root, (path) => loop.notify(path, stableMs), { stableMs, onError: (err) => opts.report({ type: 'watch-error', error: err.message }) });
    await files.ready;
    opts.report({ type: 'ready', root, stack: opts.input.stack, target: opts.client.target });
    loop.request('start', []);
  })();
  return {
    ready,
    idle: () => loop.idle(),
    async stop() {
      await ready.catch(() => {});
      await files?.close();
      await loop.stop();
    },
  };
}
