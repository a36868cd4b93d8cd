import { backoffMs } from '../apply/retry.js';

/**
 * The watch loop, after controller-runtime: every run re-reads the manifests and the live state
 * (the file event only says "look again"), outcomes are done / invalid (wait for the next save) /
 * retry with backoff (API failure), and each run has an id for its log lines. Runs never overlap:
 * saves during a run coalesce into one follow-up run.
 */
export type RunTrigger = 'start' | 'change' | 'interval' | 'retry';

export interface RunContext {
  runId: string;
  trigger: RunTrigger;
  /** Files whose events led to this run (information only: the run reads everything again). */
  paths: string[];
  signal: AbortSignal;
}

/** `invalid`: the manifests do not validate; nothing to retry until the next save. */
export type RunStatus = 'ok' | 'invalid' | 'retry';
export interface RunOutcome { status: RunStatus; error?: string }

export type WatchEvent =
  | { type: 'run-start'; runId: string; trigger: RunTrigger; paths: string[] }
  | { type: 'run-end'; runId: string; trigger: RunTrigger; status: RunStatus; ms: number; error?: string }
  | { type: 'retry-scheduled'; runId: string; attempt: number; delayMs: number };

export interface WatchLoopOptions {
  run(ctx: RunContext): Promise<RunOutcome | void>;
  debounceMs?: number;
  /** Periodic re-plan (drift check); off when absent or 0. */
  intervalMs?: number;
  retryBaseMs?: number;
  retryCapMs?: number;
  random?: () => number;
  onEvent?(e: WatchEvent): void;
  now?: () => number;
}

export const DEFAULT_DEBOUNCE_MS = 50;

export class WatchLoop {
  private seq = 0;
  private running: Promise<void> | undefined;
  private pending: { trigger: RunTrigger; paths: Set<string> } | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private debouncePaths = new Set<string>();
  private retryTimer: NodeJS.Timeout | undefined;
  private interval: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;
  private readonly abort = new AbortController();
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly opts: WatchLoopOptions) {}

  /**
   * A file changed: run once the saves have been quiet for the debounce time. `quietForMs`: how
   * long the file has already been still when the event arrives (chokidar's awaitWriteFinish), so
   * that wait counts towards the debounce instead of adding to it.
   */
  notify(path: string, quietForMs = 0): void {
    if (this.stopped) return;
    this.debouncePaths.add(path);
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      const paths = [...this.debouncePaths];
      this.debouncePaths.clear();
      this.request('change', paths);
    }, Math.max(0, (this.opts.debounceMs ?? DEFAULT_DEBOUNCE_MS) - quietForMs));
  }

  /** Asks for a run now (or right after the current one). */
  request(trigger: RunTrigger, paths: string[]): void {
    if (this.stopped) return;
    // The periodic check starts with the session's first run, not before it (an interval tick
    // before the watcher is ready would take the first run's place, and only report drift).
    if (trigger === 'start' && !this.interval && this.opts.intervalMs && this.opts.intervalMs > 0) {
      this.interval = setInterval(() => this.request('interval', []), this.opts.intervalMs);
    }
    if (trigger !== 'retry' && this.retryTimer) {
      // A fresh run reads everything again: it replaces the scheduled retry.
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
    if (this.running) {
      const p = this.pending ?? { trigger, paths: new Set<string>() };
      // A save's run, or the first one, applies: it is not left to a periodic check that only reports.
      if (trigger === 'change' || (trigger === 'start' && p.trigger !== 'change')) p.trigger = trigger;
      for (const x of paths) p.paths.add(x);
      this.pending = p;
      return;
    }
    this.running = this.execute(trigger, paths).finally(() => {
      this.running = undefined;
      const next = this.pending;
      this.pending = undefined;
      if (next && !this.stopped) this.request(next.trigger, [...next.paths]);
      else this.settle();
    });
  }

  private async execute(trigger: RunTrigger, paths: string[]): Promise<void> {
    const runId = `run-${++this.seq}`;
    const t0 = (this.opts.now ?? performance.now.bind(performance))();
    this.opts.onEvent?.({ type: 'run-start', runId, trigger, paths });
    let outcome: RunOutcome;
    try {
      outcome = (await this.opts.run({ runId, trigger, paths, signal: this.abort.signal })) ?? { status: 'ok' };
    } catch (err) {
      outcome = { status: 'retry', error: err instanceof Error ? err.message : String(err) };
    }
    const ms = (this.opts.now ?? performance.now.bind(performance))() - t0;
    this.opts.onEvent?.({ type: 'run-end', runId, trigger, status: outcome.status, ms, ...(outcome.error ? { error: outcome.error } : {}) });
    if (this.stopped) return;
    if (outcome.status === 'retry') {
      this.failures++;
      if (!this.pending) {
        const delayMs = backoffMs(this.failures, { baseMs: this.opts.retryBaseMs ?? 500, capMs: this.opts.retryCapMs ?? 30_000, random: this.opts.random });
        this.opts.onEvent?.({ type: 'retry-scheduled', runId, attempt: this.failures, delayMs });
        this.retryTimer = setTimeout(() => { this.retryTimer = undefined; this.request('retry', []); }, delayMs);
      }
    } else {
      this.failures = 0;
    }
  }

  private settle(): void {
    if (this.running || this.pending || this.debounce) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Resolves once no run is running, queued or waiting on the debounce (a scheduled retry does not count). */
  idle(): Promise<void> {
    if (!this.running && !this.pending && !this.debounce) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Stops timers, aborts the signal given to a run in progress and waits for it to return. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.debounce);
    this.debounce = undefined;
    clearTimeout(this.retryTimer);
    clearInterval(this.interval);
    this.pending = undefined;
    this.abort.abort(new Error('watch stopped'));
    await this.running;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
