import { isDeepStrictEqual } from 'node:util';
import { denyingPolicies } from '../policy/evaluate.js';
import type { ApiClient } from '../../client/api-client.js';
import type { DagEvent } from '../apply/dag.js';
import { applyPlan, type ApplyResult } from '../apply/execute.js';
import { secretsFromMap } from '../apply/materialize.js';
import { formatProblem, hasErrors, type Problem } from '../manifests/problems.js';
import type { PlanInput } from '../plan/prepare.js';
import { withoutPrunes } from '../plan/prunes.js';
import type { Plan, Step } from '../plan/types.js';
import { fileMtimeMs, fileState, watchManifestFiles, watchOtherPaths, type FileWatch } from './files.js';
import { IncrementalPlanner, type LiveRead } from './incremental.js';
import { ManifestCache } from './manifest-cache.js';
import { overlayPaths, WatchedEnvironment } from '../manifests/environments.js';
import { policyPaths } from '../policy/load.js';
import { manifestFiles } from '../manifests/load.js';
import { DEFAULT_STACK, resolveStack } from '../manifests/config.js';
import { DEFAULT_THRESHOLD, type Threshold } from '../plan/safety.js';
import { statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { WatchLoop, type RunContext, type RunOutcome, type RunTrigger } from './loop.js';

/** What a watch session tells its renderer; the CLI prints these, tests collect them. */
export type WatchReport =
  | { type: 'ready'; root: string; stack: string; target: string }
  | { type: 'run-start'; runId: string; trigger: RunTrigger; paths: string[] }
  | { type: 'invalid'; runId: string; problems: Problem[] }
  /** A valid run's warnings (a directory left out as another stack's, a literal secret): told when they differ from the last run's. */
  | { type: 'warnings'; runId: string; problems: Problem[] }
  /**
   * `apply`: a save's plan, applied next; `repair`: an --interval run's plan under --repair
   * (drift made elsewhere), applied next; `drift`: the same without --repair, reported only;
   * `preview`: --plan-only.
   */
  | { type: 'plan'; runId: string; plan: Plan; mode: 'apply' | 'repair' | 'preview' | 'drift'; skippedPrunes: number; heldBack: string[]; read: LiveRead }
  | { type: 'step'; runId: string; event: DagEvent<Step> }
  | { type: 'applied'; runId: string; result: ApplyResult }
  | { type: 'blocked'; runId: string; plan: Plan }
  /** The files changed after they were read: nothing applied, the next run plans the newer save. */
  | { type: 'superseded'; runId: string }
  /** `edgeplane.yaml`'s safety settings changed: this run and the next plan with the new ones. */
  | { type: 'safety-reloaded'; runId: string; protect: string[]; threshold: Threshold }
  | { type: 'run-end'; runId: string; status: RunOutcome['status']; ms: number; error?: string }
  | { type: 'retry-scheduled'; runId: string; attempt: number; delayMs: number }
  | { type: 'watch-error'; error: string };

export interface WatchSessionOptions {
  input: Omit<PlanInput, 'env'> & { env: Record<string, string | undefined> };
  /** The stack was given (`--stack`): `edgeplane.yaml` does not name it, and a change there is not checked. */
  stackGiven?: boolean;
  client: ApiClient;
  /** Deletions of objects gone from the manifests; off by default (a half-saved file must not delete). */
  prune?: boolean;
  /** Show plans, apply nothing. */
  planOnly?: boolean;
  /** Periodic re-plan; without `repair` drift is reported, with it it is undone. */
  intervalMs?: number;
  repair?: boolean;
  parallelism?: number;
  /** Asked before each step starts (the stack lock still holding by this process's clock: `HeldStackLock.valid`). */
  mayStart?: () => boolean;
  debounceMs?: number;
  stableMs?: number;
  /**
   * How long a plan that deletes or replaces objects waits before applying, for the files to be
   * read again and found unchanged (default 500 ms): a generator writing a file in pieces (`cmd >
   * file`) leaves it short or empty for a moment, and a destructive plan made from that moment is
   * dropped instead of applied.
   */
  confirmDestructiveMs?: number;
  /**
   * The stack file's safety settings (`safety.protect`, `safety.threshold`), read again before
   * every run: an object protected while watch runs is protected from its next run on. A stack
   * file that no longer reads stops the run (nothing applied) until a save fixes it.
   */
  readSafety?: () => { threshold: Threshold; protect: string[] };
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
/**
 * The planner a watch session runs: manifests read through the cache, then expanded for the
 * environment (variables, overlays) before validation, as a plan expands them.
 */
export function watchPlanner(input: PlanInput, client: ApiClient, cache: ManifestCache): { expansion: WatchedEnvironment; planner: IncrementalPlanner } {
  const expansion = new WatchedEnvironment(input.root, input.environment?.name, input.cwd);
  const planner = new IncrementalPlanner(input, client, (r) => expansion.expand(cache.loadFiles(r, input.cwd, input.stack)));
  return { expansion, planner };
}

export function startWatchSession(opts: WatchSessionOptions): WatchSession {
  const root = opts.input.root;
  const cache = new ManifestCache();
  // Expanded for the environment (variables, overlays) before validation, as a plan expands them.
  const { expansion, planner } = watchPlanner(opts.input, opts.client, cache);
  /** The stack edgeplane.yaml named when the session started: a change there is not followed silently. */
  const fileStack = stackOf(root);
  /** The warnings the last run told (a valid run tells its own only when they differ). */
  let lastWarnings = '';
  /**
   * The problem with the files the last run stopped at (a link to nothing, a link to a directory
   * holding this one): fixing it is no save of a manifest, so the poll looks whether the files
   * still read that way (`filesReadOtherwise`).
   */
  let fileProblem: string | undefined;
  const filesReadOtherwise = (): boolean => {
    if (fileProblem === undefined) return false;
    let now = '';
    try {
      manifestFiles(root);
    } catch (err) {
      now = (err as Error).message;
    }
    if (now === fileProblem) return false;
    fileProblem = undefined; // asked once; the run it starts reads the files again
    return true;
  };
  const run = async (ctx: RunContext): Promise<RunOutcome> => {
    // edgeplane.yaml may name other overlays and policies now: those outside are watched from this run on.
    await outside.sync();
    // The directory itself gone (deleted, or replaced by a new one: a tool regenerating it): the
    // files are watched again once it is back, and its saves are seen again.
    const gone = await watching.check();
    if (gone) return { status: 'invalid', error: gone };
    if (!opts.stackGiven) {
      let now;
      try {
        now = resolveStack(root).stack;
      } catch (err) {
        // A save broke edgeplane.yaml: read as `default`, this watch would plan another stack.
        return { status: 'invalid', error: `${(err as Error).message}\nnothing applied; waiting for a save` };
      }
      if (now !== fileStack) return { status: 'invalid', error: `${root}: edgeplane.yaml now names stack "${now}", and this watch plans stack "${opts.input.stack}": nothing applied; restart watch to use the new stack` };
    }
    if (opts.readSafety) {
      let safety;
      try {
        safety = opts.readSafety();
      } catch (err) {
        // Read as the defaults, a broken file would unprotect every object it protects.
        return { status: 'invalid', error: `${(err as Error).message}\nnothing applied; waiting for a save` };
      }
      const was = opts.input;
      const t = was.threshold ?? DEFAULT_THRESHOLD;
      if (safety.threshold.ratio !== t.ratio || safety.threshold.minOwned !== t.minOwned || JSON.stringify(safety.threshold.countUpdatesOf ?? null) !== JSON.stringify(t.countUpdatesOf ?? null) || safety.protect.join('\n') !== (was.protect ?? []).join('\n')) {
        // The planner reads the input on every plan: the new settings hold from this run on.
        was.protect = safety.protect;
        was.threshold = safety.threshold;
        opts.report({ type: 'safety-reloaded', runId: ctx.runId, protect: safety.protect, threshold: safety.threshold });
      }
    }
    let prepared;
    fileProblem = undefined;
    try {
      // The directory emptied while watching (files moved, a checkout of a branch without them): with
      // --prune the plan would delete every object of the stack. Refused as `watch --prune` is at the
      // start; deleting everything on purpose takes an empty manifest file.
      if (opts.prune && !manifestFiles(root).length) {
        return { status: 'invalid', error: `${root}: no manifest files (.yaml or .yml) here, and with --prune a plan from none would delete every object of the stack: nothing applied; waiting for a save (to delete everything on purpose, add an empty manifest file such as none.yaml)` };
      }
      // A drift check and a retry after a failure read everything; a save re-reads what it touches.
      prepared = await planner.prepare({ full: ctx.trigger === 'interval' || ctx.trigger === 'retry' });
    } catch (err) {
      // A file vanishing between listing and reading (an editor's rename-over save), or one this
      // process may not read: a problem with the files, not an API failure — wait for a save.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== undefined && FILE_PROBLEMS.has(code)) {
        fileProblem = (err as Error).message;
        return { status: 'invalid', error: fileProblem };
      }
      planner.invalidate();
      throw err;
    }
    const warnings = prepared.problems.filter((p) => p.severity === 'warning');
    const warned = warnings.map(formatProblem).join('\n');
    if (hasErrors(prepared.problems) || !prepared.plan) {
      lastWarnings = warned; // told with the errors
      opts.report({ type: 'invalid', runId: ctx.runId, problems: prepared.problems });
      return { status: 'invalid' };
    }
    if (warned !== lastWarnings) {
      lastWarnings = warned;
      if (warnings.length) opts.report({ type: 'warnings', runId: ctx.runId, problems: warnings });
    }
    const interval = ctx.trigger === 'interval';
    const mode = opts.planOnly ? 'preview' : interval ? (opts.repair ? 'repair' : 'drift') : 'apply';
    const { plan, dropped, waiting } = opts.prune ? { plan: prepared.plan, dropped: 0, waiting: [] } : withoutPrunes(prepared.plan, prepared.identities, prepared.live, opts.input.threshold);
    opts.report({ type: 'plan', runId: ctx.runId, plan, mode, skippedPrunes: dropped, heldBack: waiting, read: prepared.read });
    // Nothing is applied while a manifest object collides with an object this stack does not own.
    const applying = mode === 'apply' || mode === 'repair';
    if (plan.conflicts.length && applying) return { status: 'invalid', error: 'conflicts with objects this stack does not own' };
    if (!applying || !plan.steps.length) return { status: 'ok' };
    if (plan.blocked.length || plan.protectedChanges?.length || denyingPolicies(plan.policy).length) {
      opts.report({ type: 'blocked', runId: ctx.runId, plan });
      return { status: 'invalid' };
    }
    // A plan that takes anything away waits a moment and reads the files again first: a file read
    // while a generator was still writing it (short, or empty) must not delete what it describes,
    // remove a route's login module, or drop a hostport or a field its end had not reached yet.
    const destructive = plan.steps.some(takesAway);
    // A secret file written a moment before it was read may be half written (`>` then `>>`),
    // whatever started the run: the run waits until every one it read has been still for a
    // second, and goes ahead only if each still reads as it was read.
    const secretFiles = planner.secretFiles();
    const wait = Math.max(destructive ? opts.confirmDestructiveMs ?? 500 : 0, secretStillMs(secretFiles));
    if (wait > 0) await delay(wait, ctx.signal);
    if (ctx.signal.aborted) return { status: 'ok' };
    if (cache.changedSinceLoad(root) || expansion.changedSinceExpand() || [...secretFiles].some(([path, then]) => fileState(path) !== then)) {
      // Saved again while planning (or read mid-write): the newer save's run plans it instead.
      opts.report({ type: 'superseded', runId: ctx.runId });
      return { status: 'ok' };
    }
    const result = await applyPlan(plan, {
      client: opts.client, secrets: secretsFromMap(prepared.secrets), parallelism: opts.parallelism, signal: ctx.signal, mayStart: opts.mayStart,
      onEvent: (event) => opts.report({ type: 'step', runId: ctx.runId, event }),
    });
    opts.report({ type: 'applied', runId: ctx.runId, result });
    planner.applied(plan, result);
    if (!result.failed.length && !result.skipped.length) return { status: 'ok' };
    // Stopped mid-apply (Ctrl-C): what was not started is for the next session, not a failure to retry.
    if (ctx.signal.aborted && !result.failed.length) return { status: 'ok' };
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
  const watching = new RootWatch(root, () => watchManifestFiles(root, (path, event) => { watching.rootEvent(path, event); loop.notify(path, stableMs); }, { stableMs, onError: (err) => opts.report({ type: 'watch-error', error: err.message }) }), (path) => loop.notify(path, stableMs), () => planner.secretFiles(), filesReadOtherwise);
  const outside = new OutsideWatch(root, (paths) => watchOtherPaths(paths, (path) => loop.notify(path, stableMs), { stableMs, onError: (err) => opts.report({ type: 'watch-error', error: err.message }) }));
  const ready = (async () => {
    await watching.start();
    await outside.sync();
    opts.report({ type: 'ready', root, stack: opts.input.stack, target: opts.client.target });
    loop.request('start', []);
  })();
  return {
    ready,
    idle: () => loop.idle(),
    async stop() {
      await ready.catch(() => {});
      await watching.close();
      await outside.close();
      await loop.stop();
    },
  };
}

/**
 * What the desired state depends on outside the watched directory, by the stack file: every
 * environment's overlays (`environments.NAME.overlays: [../overlays/prod]`), the policies
 * (`policies:`), and the stack file itself (beside a watched file). A save to any of them runs as
 * a save of a manifest does. The list is read again at the start of each run, and the watcher
 * made again when it changed.
 */
export function settingsOutside(root: string): string[] {
  const { stackFile, paths } = policyPaths(root);
  const all = [...(stackFile ? [stackFile] : []), ...overlayPaths(root), ...paths].map((p) => resolve(p));
  const base = resolve(root);
  const inside = (p: string) => {
    const rel = relative(base, p);
    return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
  };
  let rootIsDir = true;
  try { rootIsDir = statSync(root).isDirectory(); } catch { /* gone: the root watch says so */ }
  return [...new Set(all)].filter((p) => !(rootIsDir && inside(p))).sort();
}

/** The watcher of `settingsOutside(root)`, renewed when that list changes. */
class OutsideWatch {
  private files: FileWatch | undefined;
  private watched = '';
  private closed = false;

  constructor(private readonly root: string, private readonly watchPaths: (paths: string[]) => FileWatch) {}

  async sync(): Promise<void> {
    const paths = settingsOutside(this.root);
    const key = paths.join('\0');
    if (this.closed || key === this.watched) return;
    this.watched = key;
    await this.files?.close();
    this.files = paths.length ? this.watchPaths(paths) : undefined;
    await this.files?.ready;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.files?.close();
  }
}

/** Errors reading the manifests that are the files' problem (wait for a save), not the API's (retry). */
const FILE_PROBLEMS = new Set(['EFTYPE', 'ENOENT', 'EACCES', 'EPERM', 'EISDIR', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG', 'EMFILE', 'ENFILE']);

/** The stack `edgeplane.yaml` names now (the default when it names none, or cannot be read). */
function stackOf(root: string): string {
  try {
    return resolveStack(root).stack;
  } catch {
    return DEFAULT_STACK;
  }
}

/** Waits `ms`, or less if `signal` aborts; its abort listener goes with it (the signal lives as long as the watch). */
export function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The watched root, by identity (device and inode): a directory deleted and made again, or
 * replaced by another (a tool that regenerates it, a symbolic link pointed elsewhere), is watched
 * afresh — the old watcher may see nothing of the new one. Every run looks at the root first
 * (`check`), and renews the watcher when the root is another than watched; between runs it is
 * looked at every `pollMs` (a link re-pointed makes no file event), and a run is asked for when
 * it is back or another.
 */
class RootWatch {
  private files: FileWatch | undefined;
  private identity: string | undefined;
  private poll: NodeJS.Timeout | undefined;
  /** The identity a run was last asked for (asked once per change). */
  private asked: string | undefined;
  /** The root was missing since it was last watched. */
  private gone = false;
  private closed = false;

  /** Secret files seen changed once (their state then), and those a run was asked for (the state it was asked for). */
  private readonly secretChanging = new Map<string, string>();
  private readonly secretAsked = new Map<string, string>();

  constructor(
    private readonly root: string, private readonly watchFiles: () => FileWatch, private readonly askRun: (path: string) => void,
    private readonly secretFiles: () => ReadonlyMap<string, string> = () => new Map(),
    private readonly filesReadOtherwise: () => boolean = () => false, private readonly pollMs = 500,
  ) {}

  async start(): Promise<void> {
    this.identity = identityOf(this.root);
    this.files = this.watchFiles();
    await this.files.ready;
    this.poll = setInterval(() => {
      const now = identityOf(this.root);
      if (now === undefined) this.gone = true;
      if (!this.closed && now !== undefined) {
        this.lookAtSecretFiles();
        if (this.filesReadOtherwise()) this.askRun(this.root);
      }
      if (this.closed || now === undefined || (!this.gone && now === this.identity) || now === this.asked) return;
      this.asked = now;
      this.askRun(this.root);
    }, this.pollMs);
    // Not unref'd: while the root is gone no file watch holds the process, and this must (the
    // session ends with stop(), which clears it).
  }

  /**
   * The files the manifests' `{file: …}` secrets name are no manifests, and may be outside the
   * directory: each poll looks at them instead. One that is not as the last run read it (created,
   * changed, removed) asks for a run once it reads the same on two polls in a row (a secret half
   * written is not applied), and once per state: a run that stops before reading it again (the
   * manifests invalid) is not asked for again and again.
   */
  private lookAtSecretFiles(): void {
    const read = this.secretFiles();
    for (const path of this.secretAsked.keys()) if (!read.has(path)) this.secretAsked.delete(path);
    for (const path of this.secretChanging.keys()) if (!read.has(path)) this.secretChanging.delete(path);
    for (const [path, then] of read) {
      const now = fileState(path);
      if (now === then) {
        this.secretChanging.delete(path);
        this.secretAsked.delete(path);
      } else if (this.secretAsked.get(path) !== now) {
        if (this.secretChanging.get(path) !== now) this.secretChanging.set(path, now);
        else {
          this.secretChanging.delete(path);
          this.secretAsked.set(path, now);
          this.askRun(path);
        }
      }
    }
  }

  /** The file watcher saw the root itself removed: it is watched afresh when it is there again, whatever its inode. */
  rootEvent(path: string, event: string): void {
    if ((event === 'unlinkDir' || event === 'unlink') && resolve(path) === resolve(this.root)) this.gone = true;
  }

  /**
   * Undefined while the root is there; else why a run cannot read it. A root that is another than
   * watched is watched afresh before the run goes on (the new watcher's first scan done), and the
   * run reads every file after that, so a save made meanwhile is in it.
   */
  async check(): Promise<string | undefined> {
    const now = identityOf(this.root);
    if (now === undefined) {
      this.gone = true;
      return `${this.root}: no such directory or file any more; watching for it to come back`;
    }
    // Back after it was gone (a new directory may get the old one's inode number), or another.
    if ((this.gone || now !== this.identity) && !this.closed) {
      this.gone = false;
      this.asked = undefined;
      this.identity = now;
      // Closed first: chokidar shares its handles by path, and a watcher made beside the old one
      // would listen on the old one's, closed with it.
      await this.files?.close();
      this.files = this.watchFiles();
      await this.files.ready;
    }
    return undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.poll);
    await this.files?.close();
  }
}

/** What tells one directory from another at the same path: device, inode and birth time (a directory made again often gets the old inode number, never the old birth time). */
function identityOf(path: string): string | undefined {
  try {
    const st = statSync(path);
    return `${st.dev}:${st.ino}:${st.birthtimeMs}`;
  } catch {
    return undefined;
  }
}

/** How long a secret file must be still before a run applies what it read from it. */
const SECRET_STILL_MS = 1000;

/** How much longer the youngest of these secret files (as read) must stay still, at most a second: 0 when none was written in the last second. */
function secretStillMs(files: ReadonlyMap<string, string>): number {
  let youngest = 0;
  for (const state of files.values()) youngest = Math.max(youngest, fileMtimeMs(state) ?? 0);
  return Math.min(SECRET_STILL_MS, Math.max(0, youngest + SECRET_STILL_MS - Date.now()));
}

/** Whether a step removes something: an object, a module, a field, or an element of a list. */
function takesAway(st: Step): boolean {
  if (st.action === 'delete' || st.action === 'replace' || st.action === 'module.delete') return true;
  return st.changes.some((c) => c.after === undefined || (Array.isArray(c.before) && (!Array.isArray(c.after) || c.before.some((x) => !(c.after as unknown[]).some((y) => isDeepStrictEqual(x, y))))));
}
